// The K/V tiles of the lane-group flash kernels (flash_attention_quad.wgsl, flash_attention_oct.wgsl):
// BK keys x 64 dims of K and of V in workgroup memory, filled by the BQ threads (the includer declares
// both overrides). PREFETCH: each thread carries PER vec4 of each into the next tile.
const NEG_BIG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

var<workgroup> ktile: array<vec4<f32>, BK * 16u>;
var<workgroup> vtile: array<vec4<f32>, BK * 16u>;

// Key k0 + idx / 16's dims 4 (idx % 16) .. +3 of K and V (zeros past the last key).
fn kv_at(k0: u32, idx: u32, head: u32, batch: u32) -> array<vec4<f32>, 2> {
  let j = k0 + idx / 16u;
  var r = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
  if (j < p.nk) {
    let row = (batch * p.nk + j) * p.kv_stride + head * 64u;
    r[0] = kv[(row + p.k_offset) / 4u + idx % 16u];
    r[1] = kv[(row + p.v_offset) / 4u + idx % 16u];
  }
  return r;
}

#if PREFETCH
override PER: u32 = BK * 16u / BQ;  // vec4 of K (and of V) per thread and tile; at most 8
#endif
