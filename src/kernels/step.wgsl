// Per-step parameters (mirrors ember::kernels::StepParams in step.h). Include where a kernel needs
// the position of the step's first token; bind it at the binding the including file names.
// Kernels that step several sequences in one dispatch (batched decode) read an array of them,
// entry workgroup_id.z for sequence `seq`: its activations are rows seq.. of the batch tensors and
// its caches slot seq of the pooled cache buffers (a lone sequence: seq 0 of its own bindings).
struct Step {
  start: u32,  // position of token 0 of this step
  rows: u32,   // T (informational)
  seq: u32,    // the sequence of this entry (0 outside batched decode)
  decode_step: u32,  // a model's decode steps from 1 (residual_mlp_q4.wgsl's tag parity)
}

// The step after `prev` (a prefill chunk or a decode step): one token at the position after it.
// The decode's first dispatch (the embedding lookup, or the sampler pick before it) advances to it.
fn next_step(prev: Step) -> Step { return Step(prev.start + prev.rows, 1u, prev.seq, prev.decode_step + 1u); }
