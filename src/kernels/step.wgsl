// Per-step parameters (mirrors ember::kernels::StepParams in step.h). Include where a kernel needs
// the position of the step's first token; bind it at the binding the including file names.
struct Step {
  start: u32,  // position of token 0 of this step
  rows: u32,   // T (informational)
  pad0: u32,
  pad1: u32,
}
