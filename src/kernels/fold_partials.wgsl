// x[c] += sum_i partials[i][c] for i < count: folds per-workgroup partial vectors (the fused
// MLP's slices) into a residual stream. Parallel over both axes: workgroup g owns COLS
// consecutive columns, its WG / COLS lane rows each sum every (WG / COLS)-th partial of those
// columns, then a tree in workgroup memory adds the lane rows. The order is fixed, so results
// are deterministic.

struct Params {
  width: u32,  // elements per vector
  count: u32,  // partial vectors
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;   // power of two
override COLS: u32 = 16u;  // columns per workgroup: a power of two dividing WG
override PARTS: u32 = WG / COLS;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let col = li % COLS;
  let part = li / COLS;
  let c = wg.x * COLS + col;
  var s = 0.0;
  if (c < p.width) {
    for (var i = part; i < p.count; i += PARTS) { s += partials[i * p.width + c]; }
  }
  red[li] = s;
  workgroupBarrier();
  for (var stride = WG / 2u; stride >= COLS; stride >>= 1u) {
    if (li < stride) { red[li] += red[li + stride]; }
    workgroupBarrier();
  }
  if (li < COLS && c < p.width) { x[c] += red[li]; }
}
