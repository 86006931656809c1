#if SUBGROUPS
enable subgroups;
#endif
// LayerNorm over each row of `channels` (one workgroup per row), optionally with affine weight and
// bias (f16) and adaLN modulation from an f32 [batch][mod_stride] buffer:
//   y = n(x) * (1 + mod[b][scale_offset + c]) + mod[b][shift_offset + c],  b = row / tokens_per_batch
struct Params {
  rows: u32,
  channels: u32,
  tokens_per_batch: u32,
  mod_stride: u32,
  shift_offset: u32,
  scale_offset: u32,
  eps: f32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
#if AFFINE
@group(0) @binding(3) var<storage, read> weight: array<u32>;
@group(0) @binding(4) var<storage, read> bias: array<u32>;
#endif
#if MODULATE
#if AFFINE
@group(0) @binding(5) var<storage, read> mods: array<f32>;
#else
@group(0) @binding(3) var<storage, read> mods: array<f32>;
#endif
#endif

override WG: u32 = 256u;

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
  let row = wg.x + wg.y * 65535u;
  if (row >= p.rows) { return; }  // uniform per workgroup: barriers stay uniform
  let base = row * p.channels;
  var s = 0.0;
  for (var c = li; c < p.channels; c += WG) { s += x[base + c]; }
  let mean = workgroup_sum(s, li, sg_size) / f32(p.channels);
  var v = 0.0;
  for (var c = li; c < p.channels; c += WG) {
    let d = x[base + c] - mean;
    v += d * d;
  }
  let rstd = inverseSqrt(workgroup_sum(v, li, sg_size) / f32(p.channels) + p.eps);
  let mb = (row / p.tokens_per_batch) * p.mod_stride;
  for (var c = li; c < p.channels; c += WG) {
    var n = (x[base + c] - mean) * rstd;
#if AFFINE
    n = n * unpack2x16float(weight[c >> 1u])[c & 1u] + unpack2x16float(bias[c >> 1u])[c & 1u];
#endif
#if MODULATE
    n = n * (1.0 + mods[mb + p.scale_offset + c]) + mods[mb + p.shift_offset + c];
#endif
    y[base + c] = n;
  }
}
