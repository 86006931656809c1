// Arithmetic ceiling probe: every thread runs 8 independent dependency chains for ITERS rounds,
// f32 FMAs on vec4 (8 flops each) or, with DOT4, packed int8 dot products with accumulate
// (dot4I8Packed: 8 ops each). The result is written only where it equals an impossible value, so
// the compiler cannot drop the work and memory traffic stays nil.
@group(0) @binding(0) var<storage, read_write> sink: array<u32>;

override ITERS: u32 = 256u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = gid.y * nwg.x * 256u + gid.x;
#if DOT4
  var acc = array<i32, 8>(i32(id), i32(id) + 1, i32(id) + 2, i32(id) + 3, i32(id) + 4, i32(id) + 5, i32(id) + 6, i32(id) + 7);
  let w = 0x01ff7f03u ^ id;
  for (var i = 0u; i < ITERS; i++) {
    for (var j = 0u; j < 8u; j++) { acc[j] = dot4I8Packed(bitcast<u32>(acc[j]), w) + acc[j]; }
  }
  var s = 0;
  for (var j = 0u; j < 8u; j++) { s ^= acc[j]; }
  if (s == 0x7fffffff) { sink[id % arrayLength(&sink)] = u32(s); }
#else
  let f = f32(id) * 1e-9;
  var a = vec4<f32>(f, f + 1.0, f + 2.0, f + 3.0);
  var b = a + 4.0;
  var c = a + 8.0;
  var d = a + 12.0;
  let m = vec4<f32>(0.999999);
  let k = vec4<f32>(1e-7);
  for (var i = 0u; i < ITERS; i++) {
    a = fma(a, m, k);
    b = fma(b, m, k);
    c = fma(c, m, k);
    d = fma(d, m, k);
    a = fma(a, m, k);
    b = fma(b, m, k);
    c = fma(c, m, k);
    d = fma(d, m, k);
  }
  let s = a + b + c + d;
  if (s.x + s.y + s.z + s.w == -1.0) { sink[id % arrayLength(&sink)] = 1u; }
#endif
}
