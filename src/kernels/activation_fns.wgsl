// Scalar activations shared by the elementwise kernel and fused epilogues.

// GELU, tanh approximation (PyTorch approximate="tanh"), as x * sigmoid(2u) = 0.5 x (1 + tanh(u)):
// one exp and one division; the ends stay exact (exp overflows to inf: x / inf = 0 for x << 0).
fn gelu_tanh(x: f32) -> f32 {
  let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}

// OpenAI CLIP's activation, x * sigmoid(1.702 x).
fn quick_gelu(x: f32) -> f32 {
  return x / (1.0 + exp(-1.702 * x));
}
