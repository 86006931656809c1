#if SUBGROUPS
enable subgroups;
#endif
// LayerNorm over each row of `channels` (one workgroup per row), optionally with affine weight and
// bias (f16) and adaLN modulation from an f32 [batch][mod_stride] buffer:
//   y = n(x) * (1 + mod[b][scale_offset + c]) + mod[b][shift_offset + c],  b = row / tokens_per_batch
// SILU: y = silu(y) last (the ChannelLayerNorm + SiLU pairs of the sparse-structure decoder).
// ROW_LANES (with SUBGROUPS): 8 adjacent lanes per row instead, the row in their registers (VPL vec4
// each, channels = 32 VPL), sums by shuffles: x read once, no barriers.
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

#if ROW_LANES
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
#else
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
#endif
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

#if ROW_LANES
override VPL: u32 = 24u;  // vec4 per lane (at most 32)

// The sum over the row's 8 lanes.
fn row_sum(v: f32) -> f32 {
  var s = v + subgroupShuffleXor(v, 1u);
  s += subgroupShuffleXor(s, 2u);
  return s + subgroupShuffleXor(s, 4u);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = gid.x + gid.y * nwg.x * WG;
  let lane = id % 8u;
  let row = id / 8u;
  let valid = row < p.rows;  // no early return: the shuffles need the whole row group
  let base = row * (p.channels / 4u) + lane;
  var v: array<vec4<f32>, 32>;  // vec4 i: channels 4 (8 i + lane) .. +3
  var s = vec4<f32>(0.0);
  for (var i = 0u; i < VPL; i++) {
    if (valid) { v[i] = x[base + 8u * i]; } else { v[i] = vec4<f32>(0.0); }
    s += v[i];
  }
  let mean = row_sum(s.x + s.y + s.z + s.w) / f32(p.channels);
  var q = vec4<f32>(0.0);
  for (var i = 0u; i < VPL; i++) {
    let d = v[i] - mean;
    q += d * d;
  }
  let rstd = inverseSqrt(row_sum(q.x + q.y + q.z + q.w) / f32(p.channels) + p.eps);
  if (!valid) { return; }
  let mb = (row / p.tokens_per_batch) * p.mod_stride;
  for (var i = 0u; i < VPL; i++) {
    let c = 4u * (8u * i + lane);
    var n = (v[i] - mean) * rstd;
#if AFFINE
    n = n * vec4<f32>(unpack2x16float(weight[c >> 1u]), unpack2x16float(weight[(c >> 1u) + 1u])) +
        vec4<f32>(unpack2x16float(bias[c >> 1u]), unpack2x16float(bias[(c >> 1u) + 1u]));
#endif
#if MODULATE
    let sc = mb + p.scale_offset + c;
    let sh = mb + p.shift_offset + c;
    n = n * (1.0 + vec4<f32>(mods[sc], mods[sc + 1u], mods[sc + 2u], mods[sc + 3u])) +
        vec4<f32>(mods[sh], mods[sh + 1u], mods[sh + 2u], mods[sh + 3u]);
#endif
#if SILU
    n = n / (1.0 + exp(-n));
#endif
    y[base + 8u * i] = n;
  }
}
#else
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
#if SILU
    n = n / (1.0 + exp(-n));
#endif
    y[base + c] = n;
  }
}
#endif
