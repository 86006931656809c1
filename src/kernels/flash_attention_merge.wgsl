// Merges the key-split partials of flash_attention_oct.wgsl (KEY_SPLIT): for each query and head,
//   out = sum_s 2^(lse_s - M) o_s / sum_s 2^(lse_s - M),  M = max_s lse_s,
// o_s being split s's normalised output and lse_s the base-2 log-sum-exp of its scores. A thread
// per output vec4 (16 a query and head of 64 dims).
struct Params {
  nq: u32,
  heads: u32,
  batches: u32,
  splits: u32,
  o_stride: u32,  // floats, a multiple of 4; the partials have the same
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<storage, read> partial: array<vec4<f32>>;  // [split * batches + batch][query][o_stride]
@group(0) @binding(1) var<storage, read> lse: array<f32>;            // [split * batches + batch][head][query]
@group(0) @binding(2) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.y * nwg.x * WG + gid.x;
  if (idx >= p.batches * p.nq * p.heads * 16u) { return; }
  let d = idx % 16u;
  let head = (idx / 16u) % p.heads;
  let row = idx / (16u * p.heads);  // batch * nq + query
  let batch = row / p.nq;
  let query = row % p.nq;
  let rows = p.batches * p.nq;
  let col = (head * 64u) / 4u + d;
  var mx = -3.0e38;
  for (var s = 0u; s < p.splits; s++) {
    mx = max(mx, lse[((s * p.batches + batch) * p.heads + head) * p.nq + query]);
  }
  var num = vec4<f32>(0.0);
  var den = 0.0;
  for (var s = 0u; s < p.splits; s++) {
    let w = exp2(lse[((s * p.batches + batch) * p.heads + head) * p.nq + query] - mx);
    num += w * partial[((s * rows + row) * p.o_stride) / 4u + col];
    den += w;
  }
  o[(row * p.o_stride) / 4u + col] = num / den;
}
