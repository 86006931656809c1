// Flash-decoding, stage 2: merges the B block partials of attention_decode.wgsl per head:
//   M = max_b m_b,  out = sum_b e^(m_b - M) acc_b / sum_b e^(m_b - M) l_b.
// Dispatched (B, heads) like stage 1, so it learns B from num_workgroups without new bind groups;
// workgroup (x, h) writes dims [x * ceil(D / B), ..) of head h. Empty blocks (l = 0) weigh nothing.
// Several sequences: grid z walks the entries of steps (sequence seq: partials and output row seq).
#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: AttentionParams;
@group(0) @binding(3) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let D = p.head_dim;
  let h = wg.y;
  let blocks = groups.x;
  let per = (D + blocks - 1u) / blocks;
  let first = wg.x * per;
  let last = min(D, first + per);
  let seq = steps[wg.z].seq;
  let base = (seq * p.heads + h) * blocks * (D + 2u);
  var M = -3.0e38;
  for (var b = 0u; b < blocks; b++) {
    if (partials[base + b * (D + 2u) + 1u] > 0.0) { M = max(M, partials[base + b * (D + 2u)]); }
  }
  var denom = 0.0;
  for (var b = 0u; b < blocks; b++) {
    let pb = base + b * (D + 2u);
    if (partials[pb + 1u] > 0.0) { denom += exp(partials[pb] - M) * partials[pb + 1u]; }
  }
  for (var d = first + li; d < last; d += WG) {
    var num = 0.0;
    for (var b = 0u; b < blocks; b++) {
      let pb = base + b * (D + 2u);
      if (partials[pb + 1u] > 0.0) { num += exp(partials[pb] - M) * partials[pb + 2u + d]; }
    }
    out[(seq * p.heads + h) * D + d] = num / denom;
  }
}
