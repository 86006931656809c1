// The sampler pick's EMBED variant (sampler_pick.wgsl, sampler_greedy.wgsl): the picked id is the
// next decode step's token, so the pick also does that step's first dispatch (embed_q4.wgsl's
// decode entry): it writes the id's row of a 4-bit table [ROWS][COLS] into `out` and advances the
// step parameters. One dependent stage a token less. Bindings 3 to 7; the including file declares
// WG.
#include "step.wgsl"
#include "q4_block.wgsl"
override ROWS: u32 = 1u;
override COLS: u32 = 32u;
@group(0) @binding(3) var<storage, read> wq: array<u32>;
@group(0) @binding(4) var<storage, read> scales: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> step: Step;
#if ASYMMETRIC
@group(0) @binding(7) var<storage, read> zero_points: array<u32>;
#endif
#include "embed_row.wgsl"

// Called by every lane with the picked id. Lane 0 alone reads and rewrites the step parameters
// (no lane else reads them), so no barrier orders the two.
fn embed_next(id: u32, li: u32) {
  if (li == 0u) { step = next_step(step); }
  for (var word = li; word < COLS / 8u; word += WG) { embed_word(id, word, 0u, ROWS, COLS); }
}
