// Embedding lookup from a 4-bit matrix [rows = vocab][cols] (q4_block.wgsl): for t < tokens,
// out[t][:] = dequantized row ids[t]. The ids live in a GPU buffer, so decode can embed the token
// the GPU just sampled without a round trip. An id >= rows (never valid) yields a zero row
// rather than a read outside the matrix (embed_row.wgsl).
// ADVANCE_STEP (entry `decode`, one workgroup): one decode step that also advances the step
// parameters on the GPU (step.wgsl): the token is ids[start + rows] of the step before (a prefill
// chunk or a decode step), and the step buffer becomes {that position, 1 row, decode_step + 1} for
// the kernels after this one. A decode step then needs no upload and no copy of its own.

struct Params {
  rows: u32,
  cols: u32,
  pad: u32,
  tokens: u32,
}

@group(0) @binding(0) var<storage, read> wq: array<u32>;
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> p: Params;
#if ASYMMETRIC
@group(0) @binding(5) var<storage, read> zero_points: array<u32>;
#endif
#if ADVANCE_STEP
#include "step.wgsl"
#if ASYMMETRIC
const STEP_SLOT = 6u;
#else
const STEP_SLOT = 5u;
#endif
@group(0) @binding(STEP_SLOT) var<storage, read_write> step: Step;
#endif

override WG: u32 = 128u;

#include "q4_block.wgsl"
#include "embed_row.wgsl"

// One lane per quant word; grid y = token.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= p.cols / 8u || gid.y >= p.tokens) { return; }
  embed_word(ids[gid.y], gid.x, gid.y, p.rows, p.cols);
}

#if ADVANCE_STEP
@compute @workgroup_size(WG)
fn decode(@builtin(local_invocation_index) li: u32) {
  let prev = step;
  storageBarrier();  // every lane has read the old parameters before lane 0 replaces them
  let next = next_step(prev);
  if (li == 0u) { step = next; }
  let pos = next.start;
  let id = select(p.rows, ids[min(pos, arrayLength(&ids) - 1u)], pos < arrayLength(&ids));
  for (var word = li; word < p.cols / 8u; word += WG) { embed_word(id, word, 0u, p.rows, p.cols); }
}
#endif
