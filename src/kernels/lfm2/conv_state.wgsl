// The state update that follows conv.wgsl's `parallel` entry: state[c] = (bx of token T-2,
// bx of token T-1), taking the old state where T < 2. T = step.rows; one invocation per channel.
#include "step.wgsl"

struct Params {
  hidden: u32,
  in_stride: u32,
  state_stride: u32,  // (conv.wgsl's batched decode; one sequence here)
  pad0: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> state: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> step: Step;

override WG: u32 = 64u;

fn bx_or_state(t: i32, c: u32) -> f32 {
  if (t >= 0) {
    let row = u32(t) * p.in_stride;
    return x[row + c] * x[row + 2u * p.hidden + c];
  }
  return state[c * 2u + u32(t + 2)];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.hidden) { return; }
  let T = i32(step.rows);
  let s0 = bx_or_state(T - 2, c);
  let s1 = bx_or_state(T - 1, c);
  state[c * 2u] = s0;
  state[c * 2u + 1u] = s1;
}
