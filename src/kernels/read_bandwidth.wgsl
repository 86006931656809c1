// Reads a buffer once with grid-stride 16-byte loads and folds it into one word per thread, so
// the compiler cannot drop the loads. Measures the memory-read ceiling (src/tune/ceilings.cpp).
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sink: array<u32>;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let n = arrayLength(&src);
  let stride = groups.x * WG;
  var acc = vec4<u32>(0u);
  for (var i = gid.x; i < n; i += stride) { acc ^= src[i]; }
  sink[gid.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
