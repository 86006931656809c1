// Edits one row of logits before the sampler reads it: an additive bias on a few ids (OpenAI's
// logit_bias), then an allowed-token bitmask (constrained decoding). A masked id gets MASKED,
// below the sampler's "no candidate" value NEG (sampler_common.wgsl), so no sampler stage ever
// takes it as a candidate; it is finite so that no stage computes inf - inf.
// The edit words (kernels/logit_edit.h): [0] vocab, [1] mask on (0/1), [2] bias count,
// [3] where the biases start; [4 ..] the mask (bit id % 32 of word 4 + id / 32); the biases are
// (id, f32 bits) pairs with distinct ids.
override WG: u32 = 256u;

const MASKED = -3.4e38;

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> edit: array<u32>;

@compute @workgroup_size(WG)
fn bias(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= edit[2]) { return; }
  let at = edit[3] + 2u * gid.x;
  let id = edit[at];
  if (id < edit[0]) { logits[id] += bitcast<f32>(edit[at + 1u]); }
}

@compute @workgroup_size(WG)
fn mask(@builtin(global_invocation_id) gid: vec3<u32>) {
  let id = gid.x;
  if (id >= edit[0] || edit[1] == 0u) { return; }
  if ((edit[4u + id / 32u] & (1u << (id % 32u))) == 0u) { logits[id] = MASKED; }
}
