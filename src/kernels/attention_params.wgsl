// Parameters shared by the attention kernels (mirrors AttentionParams in attention.h).
struct AttentionParams {
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  row: u32,        // elements per cache row: head_dim + padding
  q_stride: u32,   // elements between query tokens in q
  q_offset: u32,   // element offset of token 0, head 0 in q
  scale: f32,      // 1 / sqrt(head_dim)
  seq_stride: u32, // decode: elements between two sequences' caches (Step.seq)
  k_offset: u32,   // decode NORM_ROPE_KV: element offsets of k and v in the qkv row
  v_offset: u32,
  eps: f32,        // decode NORM_ROPE_KV: the q/k RMSNorm epsilon
  pad0: u32,
}
