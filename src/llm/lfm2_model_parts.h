// The parts of an Lfm2Model's decode graph that its source files share (lfm2_model.cpp builds and
// records the graph, lfm2_residual_mlp.cpp wires the one-dispatch residual MLP into it).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "kernels/attention.h"
#include "kernels/lfm2/conv.h"
#include "kernels/elementwise.h"
#include "kernels/embed_q4.h"
#include "kernels/kv_write.h"
#include "kernels/matmul_q4.h"
#include "kernels/matvec_q4.h"
#include "kernels/mlp_q4.h"
#include "kernels/qk_norm_rope_kv.h"
#include "kernels/lfm2/residual_mlp_q4.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "llm/lfm2_layer_weights.h"
#include "llm/lfm2_model.h"

namespace ember::llm {

// The kernel families of one model, configured once (shapes and the candidate's choices).
struct Lfm2Model::Ops {
  std::optional<kernels::RmsNorm> norm, q_norm, k_norm;
  std::optional<kernels::Rope> rope;
  std::optional<kernels::KvWrite> kv_write;
  std::optional<kernels::QkNormRopeKv> qk_norm_rope_kv;  // with qk_fuse (decode and prefill)
  std::optional<kernels::AttentionDecode> attn_decode;
  std::optional<kernels::AttentionPrefill> attn_prefill;
  std::optional<kernels::ShortConv> conv_decode, conv_prefill;
  std::optional<kernels::SiluMul> silu_mul;
  std::optional<kernels::EmbedQ4> embed;
  std::optional<kernels::MlpQ4> mlp;  // decode under mlp_pair; the ffn norm fused in where norm_fuse
  std::map<std::string, kernels::MatvecQ4> matvec;   // by shape key (decode; the norm/gate fusions applied)
  std::optional<kernels::MatvecQ4> prefill_head;     // the head without prefetch, where decode's prefetches
  std::map<std::string, kernels::MatmulQ4> matmul;   // by shape key (prefill)
  std::map<uint32_t, kernels::ResidualMlpQ4> residual_mlp;  // by out-projection cols (decode, residual_mlp_)
};

// A layer's matrices and the bind groups that do not depend on the number of tokens.
struct Lfm2Model::Layer : Lfm2LayerWeights {
  std::string prefix;  // "L3."
  gpu::BindGroup op_norm, ffn_norm, q_norm, k_norm, rope, kv_write, attn_prefill, silu_mul;
  gpu::BindGroup qk_norm_rope_kv;  // with qk_fuse
  kernels::AttentionDecode::Groups attn_decode;
  kernels::ShortConv::Groups conv_decode, conv_prefill;
  kernels::Bound mix_in_mv, mix_out_mv, gate_up_mv, down_mv;  // decode matvecs
  bool decode_norm_fused = false;                           // mix_in_mv / gate_up_mv / mlp read x itself
  kernels::MlpBound mlp;                                     // decode fused MLP (mlp_pair)
  kernels::Bound residual_mlp;                               // decode mix_out + MLP (residual_mlp_)
};

}  // namespace ember::llm
