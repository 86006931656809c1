// Scalar activations shared by the elementwise kernel and fused epilogues.

// tanh from exp(-2|u|): never overflows, exact limits +-1.
fn tanh_stable(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  let t = (1.0 - e) / (1.0 + e);
  return select(-t, t, u >= 0.0);
}

// GELU, tanh approximation (PyTorch approximate="tanh").
fn gelu_tanh(x: f32) -> f32 {
  let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + tanh_stable(u));
}

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}
