// Flash-decoding, stage 2: merges the B block partials of stage 1 (attention_decode*.wgsl) per head:
//   M = max_b m_b,  out = sum_b e^(m_b - M) acc_b / sum_b e^(m_b - M) l_b.
// Dispatched (B, heads) like stage 1, so it learns B from num_workgroups without new bind groups;
// workgroup (x, h) writes dims [x * per, (x + 1) * per) of head h, per = ceil(D / B). Every step is
// spread over the lanes (a block per lane for the weights, then lanes split per x blocks), so the
// serial chains stay short at any B. Empty blocks (l = 0) weigh nothing.
// Several sequences: grid z walks the entries of steps (sequence seq: partials and output row seq).
#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: AttentionParams;
@group(0) @binding(3) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;
override MAXB: u32 = 64u;  // largest B (the config's max_blocks)

#include "reduce.wgsl"

var<workgroup> weight: array<f32, MAXB>;
var<workgroup> sums: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let D = p.head_dim;
  let h = wg.y;
  let blocks = groups.x;
  let per = (D + blocks - 1u) / blocks;
  let first = wg.x * per;
  let seq = steps[wg.z].seq;
  let base = (seq * p.heads + h) * blocks * (D + 2u);

  var mx = -3.0e38;
  for (var b = li; b < blocks; b += WG) {
    if (partials[base + b * (D + 2u) + 1u] > 0.0) { mx = max(mx, partials[base + b * (D + 2u)]); }
  }
  let M = workgroup_max(mx, li, 1u);
  var den = 0.0;
  for (var b = li; b < blocks; b += WG) {
    let pb = base + b * (D + 2u);
    let w = select(0.0, exp(partials[pb] - M), partials[pb + 1u] > 0.0);
    weight[b] = w;
    den += w * partials[pb + 1u];
  }
  let denom = workgroup_sum(den, li, 1u);  // its barriers publish weight[]

  // Lane (g, j) sums blocks g, g + G, ... of dim first + j; then lane j adds the G sums.
  let G = WG / per;  // per <= D / 2 (B >= 2) <= WG: at least one group
  let j = li % per;
  let g = li / per;
  let d = first + j;
  var num = 0.0;
  if (g < G && d < D) {
    for (var b = g; b < blocks; b += G) { num += weight[b] * partials[base + b * (D + 2u) + 2u + d]; }
  }
  sums[li] = num;
  workgroupBarrier();
  if (li < per && d < D) {
    var total = 0.0;
    for (var k = 0u; k < G; k++) { total += sums[k * per + li]; }
    out[(seq * p.heads + h) * D + d] = total / denom;
  }
}
