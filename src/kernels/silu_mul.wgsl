// out[t][i] = silu(gate[t][i]) * up[t][i] from a [T][2 * ffn] gate | up tensor (token stride
// in_stride), out dense [T][ffn]. Grid (ffn / WG, T).
struct Params {
  ffn: u32,
  in_stride: u32,
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> gate_up: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= p.ffn) { return; }
  let t = gid.y;
  let g = gate_up[t * p.in_stride + i];
  let u = gate_up[t * p.in_stride + p.ffn + i];
  out[t * p.ffn + i] = g / (1.0 + exp(-g)) * u;
}
