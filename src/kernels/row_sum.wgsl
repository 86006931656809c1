// out[r] = sum_c x[r * cols + c]: one workgroup per row. The smallest real kernel family, used to
// prove the harness (subgroup and shared-memory reductions) against the CPU reference.
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  rows: u32,
  cols: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;  // power of two (the shared-memory tree halves it)

#include "reduce.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if !SUBGROUPS
  let sg_size = 1u;
#endif
  let row = wg.x;
  var acc = 0.0;
  for (var c = li; c < p.cols; c += WG) { acc += x[row * p.cols + c]; }
  let total = workgroup_sum(acc, li, sg_size);
  if (li == 0u) { out[row] = total; }
}
