// Params of qmatmul.wgsl and its split-K sum pass (mirrors Params in qmatmul.cpp).
struct Params {
  tokens: u32,
  rows: u32,
  cols: u32,
  padded_rows: u32,
  padded_cols: u32,
  x_stride: u32,
  y_stride: u32,
  tokens_per_batch: u32,
  gate_stride: u32,
  gate_offset: u32,
  add_period: u32,
  k_chunk: u32,  // columns per workgroup z (padded_cols without SPLIT_K)
}
