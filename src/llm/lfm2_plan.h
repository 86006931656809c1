// The fusion planner: the LFM2 graph (lfm2_graph.h) plus the fusions a candidate asks for and the
// device's kernels honour, turned into the dispatch list of one decode step (one token), one
// prefill chunk (T tokens) or one batched step (N sequences). A fusion is one rule here (the ops it
// covers, when it applies) and one kernel the executors record for it. docs/llm-graph.md.
#pragma once

#include <string>
#include <vector>

#include "llm/lfm2_graph.h"

namespace ember::llm {

enum class Lfm2Mode { decode, prefill, batched };

// The kernel a planned dispatch records (the executors map each to a kernel family).
enum class Lfm2Kernel {
  embed,             // EmbedQ4
  rms_norm,          // RmsNorm over the hidden rows
  last_row,          // a copy of the last token's row of x for the head (no dispatch)
  matvec,            // MatvecQ4; with a norm op first, its norm prologue
  matvec_conv,       // MatvecQ4 with the conv step as its epilogue
  matvec_gated,      // MatvecQ4 with silu * up as its epilogue
  matvec_batch,      // MatvecBatchQ4 over the batch rows
  matmul,            // MatmulQ4
  matmul_gated,      // MatmulQ4 with silu * up as its epilogue
  conv_step,         // ShortConv, one token against the state
  conv_prefill,      // ShortConv over a chunk
  q_norm,            // RmsNorm per q head
  k_norm,            // RmsNorm per k head
  rope,              // Rope
  kv_write,          // KvWrite
  qk_norm_rope_kv,   // QkNormRopeKv: the four above as one dispatch
  attention_decode,  // AttentionDecode; with the q/k ops first, it applies them itself
  attention_prefill, // AttentionPrefill
  silu_mul,          // SiluMul
  mlp,               // MlpQ4: gate_up, silu * up and down (its norm prologue with ffn_norm first)
  residual_mlp,      // ResidualMlpQ4: out_proj, ffn norm and the MLP in one dispatch
};
const char* lfm2_kernel_name(Lfm2Kernel k);

// The fusions to plan with: what the candidate asks for, less what this device's kernels refused.
struct Lfm2Fusions {
  bool norm_prologue = false;    // decode matvecs / the fused MLP / the head compute their input norm (normFuse)
  bool conv_in_proj = false;     // decode: the conv step in the conv in_proj matvec
  bool gated_matvec = false;     // decode: silu * up in the gate_up matvec
  bool gated_matmul = false;     // prefill: silu * up in the gate_up matmul
  bool mlp_pair = false;         // decode and batched: the MLP as one MlpQ4 dispatch
  bool residual_mlp = false;     // decode: out_proj + ffn norm + MLP as one dispatch
  bool qk_fuse = false;          // decode and prefill: q/k norms, RoPE and KV append as one dispatch
  bool qk_in_attention = false;  // decode and batched: those inside the attention dispatch
};
struct Lfm2Dispatch {
  Lfm2Kernel kernel;
  int layer = -1;               // -1: embed or head
  size_t first = 0, count = 0;  // the graph ops [first, first + count) it computes
  std::string label;            // their module paths joined by " + "
};

struct Lfm2Plan {
  Lfm2Mode mode;
  std::vector<Lfm2Dispatch> steps;
  size_t layers_begin = 0, head_begin = 0;  // steps [layers_begin, head_begin) are the layers'
  std::vector<std::string> labels() const;
  // Steps that are dispatches (last_row is a copy); a kernel may record a second pass besides
  // (the fused MLP's fold, a split attention's merge).
  size_t dispatches() const;
};

Lfm2Plan plan_lfm2(const Lfm2Graph& graph, const Lfm2Fusions& fusions, Lfm2Mode mode);
// The matrix a dispatch multiplies by (its first op with a shape key); null: none.
const Lfm2Op* lfm2_matrix_op(const Lfm2Graph& graph, const Lfm2Dispatch& d);

}  // namespace ember::llm
