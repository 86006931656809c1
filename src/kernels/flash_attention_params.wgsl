// Params and bindings shared by the flash attention kernels (flash_attention*.wgsl; mirrored in
// flash_attention.cpp).
struct Params {
  nq: u32,
  nk: u32,
  q_stride: u32,
  kv_stride: u32,
  o_stride: u32,
  q_offset: u32,
  k_offset: u32,
  v_offset: u32,
  scale: f32,
  key_chunk: u32,  // KEY_SPLIT (oct): keys per split, a multiple of BK
  key_splits: u32,
  _p0: u32,
}

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> kv: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;
