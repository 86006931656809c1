// The smallest *dependent* stage of a decode step: every workgroup reads the whole 1,024-float
// vector the previous dispatch wrote, sums it, and writes its share of the next vector. A decode
// step is a chain of such stages (each matvec needs all of the previous one's output); a chain
// of these dispatches, timed together, is the per-stage cost no arithmetic adds to
// (src/tune/ceilings.cpp). Values stay bounded: out = in / 2 + sum / 4096.
//
// Optionally each stage also reads its own slice of "weights" (binding 2, W4 16-byte words shared
// by the grid), issued before the input as a decode matvec does, so that a chain with the bytes of
// a real matvec shows what those add to a stage.
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>, 256>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>, 256>;
@group(0) @binding(2) var<storage, read> weights: array<vec4<u32>>;

override W4: u32 = 0u;  // 16-byte words of weights this stage reads

var<workgroup> partials: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  var folded = vec4<u32>(0u);
  for (var j = wg.x * 256u + li; j < W4; j += groups.x * 256u) { folded ^= weights[j]; }
  let v = src[li];
  partials[li] = v;
  workgroupBarrier();
  for (var stride = 128u; stride > 0u; stride >>= 1u) {
    if (li < stride) { partials[li] += partials[li + stride]; }
    workgroupBarrier();
  }
  let s = partials[0];
  var sum = s.x + s.y + s.z + s.w;
  // Keeps the weight loads alive: weights that fold to this word never occur (the tests use zeros).
  if (all(folded == vec4<u32>(0x9e3779b9u, 0x7f4a7c15u, 0x85ebca6bu, 0xc2b2ae35u))) { sum += 1.0; }
  // Piece i of the output belongs to workgroup i % groups: every workgroup writes some while it
  // has any, so none can finish before it has read the whole input.
  let i = wg.x + groups.x * li;
  if (i < 256u) { dst[i] = src[i] * 0.5 + sum / 4096.0; }
}
