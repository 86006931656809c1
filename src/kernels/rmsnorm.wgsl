// RMSNorm over rows: out = x * rsqrt(mean(x^2) + eps) * w, one workgroup per row.
// A row is `cols` contiguous values; row r is head r % heads of token r / heads, at
// offset + token * token_stride + head * cols. heads = 1 is the plain norm over [T][cols]; heads > 1
// is the per-head q/k norm (one shared [cols] weight applied to every head), which can work in place
// on a fused qkv tensor through token_stride and offset.
//   IN_PLACE: x is overwritten (no out binding); otherwise out is dense [rows][cols].
//   SUBGROUPS: subgroup reduction (reduce.wgsl).
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  cols: u32,
  eps: f32,
  heads: u32,
  token_stride: u32,
  offset: u32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

#if IN_PLACE
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
#else
@group(0) @binding(0) var<storage, read> x: array<f32>;
#endif
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
#if !IN_PLACE
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#endif

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
  let base = p.offset + (row / p.heads) * p.token_stride + (row % p.heads) * p.cols;
  var acc = 0.0;
  for (var c = li; c < p.cols; c += WG) {
    let v = x[base + c];
    acc += v * v;
  }
  let total = workgroup_sum(acc, li, sg_size);
  let scale = inverseSqrt(total / f32(p.cols) + p.eps);
  for (var c = li; c < p.cols; c += WG) {
#if IN_PLACE
    x[base + c] = x[base + c] * scale * w[c];
#else
    out[row * p.cols + c] = x[base + c] * scale * w[c];
#endif
  }
}
