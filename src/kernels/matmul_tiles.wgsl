// Workgroup-memory tiles of the register-tiled matmuls (matmul_q4.wgsl, qmatmul.wgsl): the X tile
// xs[k][token] and the dequantized W tile [k][row] for one K step, and which outputs a thread
// owns. The includer defines WG_T, WG_R (threads along tokens, rows), KS (K step), BT, BR (tile
// tokens, rows). Padded strides: the transposing stores do not collide.
// Default: a thread's outputs are strided by the thread grid (scalar reads, conflict-free).
// VEC4: the tiles as vec4, so a thread reads its tokens and rows in runs of 4 with wide loads
// (thread tt owns tokens 4 tt .. 4 tt + 3, then 4 (WG_T + tt) .. + 3; rows likewise): a quarter
// of the loads per FMA.
#if VEC4
override XS4 = BT / 4u + 1u;
override WS4 = BR / 4u + 1u;
var<workgroup> xs4: array<vec4<f32>, KS * XS4>;
var<workgroup> ws4: array<vec4<f32>, KS * WS4>;
fn store_x(kk: u32, tl: u32, v: f32) { xs4[kk * XS4 + tl / 4u][tl % 4u] = v; }
fn store_w(kk: u32, rl: u32, v: f32) { ws4[kk * WS4 + rl / 4u][rl % 4u] = v; }
fn token_of(tt: u32, i: u32) -> u32 { return (i / 4u) * 4u * WG_T + 4u * tt + i % 4u; }
fn row_of(tr: u32, j: u32) -> u32 { return (j / 4u) * 4u * WG_R + 4u * tr + j % 4u; }
#else
override XS = BT + 1u;
override WSS = BR + 1u;
var<workgroup> xs: array<f32, KS * XS>;
var<workgroup> wsh: array<f32, KS * WSS>;
fn store_x(kk: u32, tl: u32, v: f32) { xs[kk * XS + tl] = v; }
fn store_w(kk: u32, rl: u32, v: f32) { wsh[kk * WSS + rl] = v; }
fn token_of(tt: u32, i: u32) -> u32 { return tt + i * WG_T; }
fn row_of(tr: u32, j: u32) -> u32 { return tr + j * WG_R; }
#endif
