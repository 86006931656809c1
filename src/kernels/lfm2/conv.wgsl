// LFM2 short convolution over T tokens (T = step.rows). in: the in_proj output, token t at
// t * in_stride: [B | C | xs], each `hidden` wide. bx = B * xs; a depthwise causal conv of width 3
// over bx with taps [hidden][3] (tap 2 = the current token, taps 0 and 1 the two before);
// y = C * conv, out dense [T][hidden]. state [hidden][2] holds the two previous bx values (oldest
// first; zeros at sequence start), so decode and prefill agree.
//   main: fused, one invocation per channel walks the T tokens in order and updates the state
//         (one dispatch; the decode path, T = 1). Several sequences at once: entry z of steps
//         is sequence seq, whose tokens are rows seq.. of x and out and whose state is at
//         seq * state_stride.
//   parallel: one invocation per (token, channel), reads the state but does not update it; run
//         conv_state.wgsl after it (the unfused prefill path, parallel over T).
#include "step.wgsl"

struct Params {
  hidden: u32,
  in_stride: u32,
  state_stride: u32,  // elements between the states of two sequences
  pad0: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> taps: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;

fn bx_at(t: u32, c: u32) -> f32 {
  let row = t * p.in_stride;
  return x[row + c] * x[row + 2u * p.hidden + c];
}

// bx of token t - back (back <= 2), from the state when that token precedes this step.
fn bx_before(t: u32, back: u32, c: u32) -> f32 {
  if (t >= back) { return bx_at(t - back, c); }
  return state[c * 2u + 2u - (back - t)];
}


@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.hidden) { return; }
  let st = steps[gid.z];
  let sc = st.seq * p.state_stride + c * 2u;
  let w0 = taps[c * 3u];
  let w1 = taps[c * 3u + 1u];
  let w2 = taps[c * 3u + 2u];
  var s0 = state[sc];
  var s1 = state[sc + 1u];
  for (var t = st.seq; t < st.seq + st.rows; t++) {
    let bx = bx_at(t, c);
    out[t * p.hidden + c] = x[t * p.in_stride + p.hidden + c] * (w0 * s0 + w1 * s1 + w2 * bx);
    s0 = s1;
    s1 = bx;
  }
  state[sc] = s0;
  state[sc + 1u] = s1;
}

@compute @workgroup_size(WG)
fn parallel(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  let t = gid.y;
  if (c >= p.hidden || t >= steps[0].rows) { return; }
  let conv = taps[c * 3u] * bx_before(t, 2u, c) + taps[c * 3u + 1u] * bx_before(t, 1u, c) + taps[c * 3u + 2u] * bx_at(t, c);
  out[t * p.hidden + c] = x[t * p.in_stride + p.hidden + c] * conv;
}
