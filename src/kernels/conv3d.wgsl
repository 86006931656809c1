// 3x3x3 convolution, stride 1, zero padding 1, as an implicit GEMM over an int8 weight matrix:
//   y[v][o] = b[o] + sum_k W[o][k] * X(v, k) (+ res[v][o] with RESIDUAL)
// X and Y are f32 channels-last volumes [D][H][W][C] (voxel v = (z*H + y)*W + x). W is [cout][cin*27]
// in the stage pack's int8 tile-major layout (16-row tiles x 64-column groups, one f16 scale per
// row and group), column k = ci*27 + kz*9 + ky*3 + kx (PyTorch's flattening of [out][in][3][3][3]);
// X(v, k) is channel ci of the neighbour (z+kz-1, y+ky-1, x+kx-1), 0 outside the volume.
// A workgroup computes BM = 64 voxels x TN rows (TN = 16, 32 or 64), each thread 4 x 4; K advances
// KS = 32 columns at a time through workgroup memory (half a scale group), W arriving dequantized.
struct Params {
  d: u32,
  h: u32,
  w: u32,
  cin: u32,
  cout: u32,
  k: u32,            // cin * 27
  padded_cols: u32,  // k rounded up to 64
  voxels: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> wq: array<u32>;
@group(0) @binding(2) var<storage, read> ws: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;
#if RESIDUAL
@group(0) @binding(6) var<storage, read> res: array<f32>;
#endif

override TN: u32 = 64u;  // output rows per workgroup (a multiple of 16, at most 64)
const BM: u32 = 64u;     // voxels per workgroup
const KS: u32 = 32u;     // K step

var<workgroup> xs: array<f32, 2048>;  // [KS][BM]
var<workgroup> wt: array<f32, 2048>;  // [TN][KS]

// Twin of trellis::quant_block_index (src/trellis/stage_tensors.h): tile outer, group inner.
fn quant_block_index(tile: u32, group: u32) -> u32 {
  return tile * (p.padded_cols / 64u) + group;
}

fn gather(v: u32, k: u32) -> f32 {
  if (v >= p.voxels || k >= p.k) { return 0.0; }
  let ci = k / 27u;
  let tap = k % 27u;
  let vx = v % p.w;
  let vy = (v / p.w) % p.h;
  let vz = v / (p.w * p.h);
  // Unsigned wrap-around makes the "-1" neighbour of 0 a huge value, rejected like the far side.
  let sx = vx + tap % 3u - 1u;
  let sy = vy + (tap / 3u) % 3u - 1u;
  let sz = vz + tap / 9u - 1u;
  if (sx >= p.w || sy >= p.h || sz >= p.d) { return 0.0; }
  return x[((sz * p.h + sy) * p.w + sx) * p.cin + ci];
}

@compute @workgroup_size(TN * 4u)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let v0 = wg.x * BM;
  let r0 = wg.y * TN;
  let nt = TN * 4u;
  let tv = (li % 16u) * 4u;  // this thread's voxels v0 + tv .. +3
  let tr = (li / 16u) * 4u;  // and rows r0 + tr .. +3
  var acc: array<vec4<f32>, 4>;  // acc[j][i]: row tr + j, voxel tv + i
  for (var j = 0u; j < 4u; j++) { acc[j] = vec4<f32>(0.0); }
  for (var k0 = 0u; k0 < p.padded_cols; k0 += KS) {
    for (var idx = li; idx < KS * BM; idx += nt) {
      let kk = idx / BM;
      let vv = idx % BM;
      xs[idx] = gather(v0 + vv, k0 + kk);
    }
    // W: TN rows x KS int8 = TN * KS / 4 words.
    let group = k0 / 64u;
    for (var widx = li; widx < TN * KS / 4u; widx += nt) {
      let rr = widx / (KS / 4u);
      let kw = (widx % (KS / 4u)) * 4u;  // first of the word's 4 columns within the step
      let r = r0 + rr;
      let block = quant_block_index(r / 16u, group);
      let ri = r % 16u;
      let word = wq[(block * 1024u + ri * 64u + (k0 % 64u) + kw) >> 2u];
      let s = unpack2x16float(ws[(block * 16u + ri) >> 1u])[ri & 1u];
      for (var b = 0u; b < 4u; b++) {
        wt[rr * KS + kw + b] = f32(extractBits(bitcast<i32>(word), 8u * b, 8u)) * s;
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < KS; kk++) {
      let a = vec4<f32>(xs[kk * BM + tv], xs[kk * BM + tv + 1u], xs[kk * BM + tv + 2u], xs[kk * BM + tv + 3u]);
      for (var j = 0u; j < 4u; j++) {
        acc[j] += a * wt[(tr + j) * KS + kk];
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < 4u; j++) {
    let r = r0 + tr + j;
    if (r >= p.cout) { continue; }
    let b = unpack2x16float(bias[r >> 1u])[r & 1u];
    for (var i = 0u; i < 4u; i++) {
      let v = v0 + tv + i;
      if (v >= p.voxels) { continue; }
      var o = acc[j][i] + b;
#if RESIDUAL
      o += res[v * p.cout + r];
#endif
      y[v * p.cout + r] = o;
    }
  }
}
