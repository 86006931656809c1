// The qmatmul epilogue (see qmatmul.wgsl), shared by qmatmul.wgsl and qmatmul_split_sum.wgsl,
// which declare what it names: y, gate (GATE) or add (ADD_ROWS), p, and gelu_tanh (GELU).
// v = the product plus bias at token t, row r.
fn store_output(t: u32, r: u32, v_in: f32) {
  var v = v_in;
  let o = t * p.y_stride + r;
#if GELU
  v = gelu_tanh(v);
#endif
#if GATE
  v = y[o] + gate[(t / p.tokens_per_batch) * p.gate_stride + p.gate_offset + r] * v;
#endif
#if RESIDUAL
  v = y[o] + v;
#endif
#if ADD_ROWS
  v = v + add[(t % p.add_period) * p.rows + r];
#endif
  y[o] = v;
}
