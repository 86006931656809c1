#include "llm/lfm2_plan.h"

#include <initializer_list>

namespace ember::llm {

namespace {

using R = Lfm2Role;
using K = Lfm2Kernel;
using M = Lfm2Mode;

// A fusion: the kernel that computes `roles` (consecutive ops of the graph) in one dispatch, where
// `applies` says the mode and the fusions allow it. Rules are tried in order at each op; the
// first that matches wins, so a wider fusion comes before the narrower ones it contains.
struct Rule {
  K kernel;
  std::initializer_list<R> roles;
  bool (*applies)(const Lfm2Fusions&, M);
};

const Rule kRules[] = {
    // decode: a layer's out projection, ffn norm and MLP, its workgroups handing over inside it
    {K::residual_mlp, {R::mix_out, R::ffn_norm, R::gate_up, R::silu_mul, R::down},
     [](const Lfm2Fusions& f, M m) { return m == M::decode && f.residual_mlp; }},
    // decode: the fused MLP with its norm prologue; batched (no prologue): the fused MLP per row
    {K::mlp, {R::ffn_norm, R::gate_up, R::silu_mul, R::down},
     [](const Lfm2Fusions& f, M m) { return m == M::decode && f.mlp_pair && f.norm_prologue; }},
    {K::mlp, {R::gate_up, R::silu_mul, R::down}, [](const Lfm2Fusions& f, M m) { return m != M::prefill && f.mlp_pair; }},
    // decode: the conv step as the in_proj matvec's epilogue (with the operator norm as its prologue)
    {K::matvec_conv, {R::op_norm, R::mix_in, R::conv},
     [](const Lfm2Fusions& f, M m) { return m == M::decode && f.conv_in_proj && f.norm_prologue; }},
    {K::matvec_conv, {R::mix_in, R::conv}, [](const Lfm2Fusions& f, M m) { return m == M::decode && f.conv_in_proj; }},
    // silu * up as the gate_up matvec's (decode) or matmul's (prefill) epilogue
    {K::matvec_gated, {R::ffn_norm, R::gate_up, R::silu_mul},
     [](const Lfm2Fusions& f, M m) { return m == M::decode && f.gated_matvec && f.norm_prologue; }},
    {K::matvec_gated, {R::gate_up, R::silu_mul}, [](const Lfm2Fusions& f, M m) { return m == M::decode && f.gated_matvec; }},
    {K::matmul_gated, {R::gate_up, R::silu_mul}, [](const Lfm2Fusions& f, M m) { return m == M::prefill && f.gated_matmul; }},
    // decode: a matvec computes the norm of x that it reads; the head's matvec in prefill too
    {K::matvec, {R::op_norm, R::mix_in}, [](const Lfm2Fusions& f, M m) { return m == M::decode && f.norm_prologue; }},
    {K::matvec, {R::ffn_norm, R::gate_up}, [](const Lfm2Fusions& f, M m) { return m == M::decode && f.norm_prologue; }},
    {K::matvec, {R::final_norm, R::head}, [](const Lfm2Fusions& f, M m) { return m != M::batched && f.norm_prologue; }},
    // q/k norms, RoPE and the KV append inside the attention, or as one dispatch of their own (the
    // batched step has no separate kernels for them)
    {K::attention_decode, {R::q_norm, R::k_norm, R::rope, R::kv_append, R::attention},
     [](const Lfm2Fusions& f, M m) { return m != M::prefill && f.qk_in_attention; }},
    {K::qk_norm_rope_kv, {R::q_norm, R::k_norm, R::rope, R::kv_append},
     [](const Lfm2Fusions& f, M m) { return m == M::batched || f.qk_fuse; }},
};

// The kernel of an op that no rule fused.
K single(R role, M m) {
  switch (role) {
    case R::embed: return K::embed;
    case R::op_norm:
    case R::ffn_norm:
    case R::final_norm: return K::rms_norm;
    case R::mix_in:
    case R::mix_out:
    case R::gate_up:
    case R::down: return m == M::decode ? K::matvec : m == M::prefill ? K::matmul : K::matvec_batch;
    case R::head: return m == M::batched ? K::matvec_batch : K::matvec;  // prefill's one row is a matvec too
    case R::conv: return m == M::prefill ? K::conv_prefill : K::conv_step;
    case R::q_norm: return K::q_norm;
    case R::k_norm: return K::k_norm;
    case R::rope: return K::rope;
    case R::kv_append: return K::kv_write;
    case R::attention: return m == M::prefill ? K::attention_prefill : K::attention_decode;
    case R::silu_mul: return K::silu_mul;
  }
  return K::embed;
}

bool matches(const Lfm2Graph& g, size_t at, size_t end, const Rule& r) {
  if (at + r.roles.size() > end) return false;
  size_t k = at;
  for (R role : r.roles)
    if (g.ops[k++].role != role) return false;
  return true;
}

}  // namespace

const char* lfm2_kernel_name(Lfm2Kernel k) {
  switch (k) {
    case K::embed: return "embed";
    case K::rms_norm: return "rms_norm";
    case K::last_row: return "last_row";
    case K::matvec: return "matvec";
    case K::matvec_conv: return "matvec_conv";
    case K::matvec_gated: return "matvec_gated";
    case K::matvec_batch: return "matvec_batch";
    case K::matmul: return "matmul";
    case K::matmul_gated: return "matmul_gated";
    case K::conv_step: return "conv_step";
    case K::conv_prefill: return "conv_prefill";
    case K::q_norm: return "q_norm";
    case K::k_norm: return "k_norm";
    case K::rope: return "rope";
    case K::kv_write: return "kv_write";
    case K::qk_norm_rope_kv: return "qk_norm_rope_kv";
    case K::attention_decode: return "attention_decode";
    case K::attention_prefill: return "attention_prefill";
    case K::silu_mul: return "silu_mul";
    case K::mlp: return "mlp";
    case K::residual_mlp: return "residual_mlp";
  }
  return "?";
}

std::vector<std::string> Lfm2Plan::labels() const {
  std::vector<std::string> out;
  for (const auto& s : steps) out.push_back(std::string(lfm2_kernel_name(s.kernel)) + " " + s.label);
  return out;
}

size_t Lfm2Plan::dispatches() const {
  size_t n = 0;
  for (const auto& s : steps) n += s.kernel != K::last_row;
  return n;
}

const Lfm2Op* lfm2_matrix_op(const Lfm2Graph& g, const Lfm2Dispatch& d) {
  for (size_t k = d.first; k < d.first + d.count; k++)
    if (g.ops[k].shape_key) return &g.ops[k];
  return nullptr;
}

Lfm2Plan plan_lfm2(const Lfm2Graph& g, const Lfm2Fusions& f, Lfm2Mode mode) {
  Lfm2Plan plan{.mode = mode};
  // Rules never reach across a layer boundary: each range is planned on its own.
  auto plan_range = [&](size_t begin, size_t end) {
    for (size_t at = begin; at < end;) {
      Lfm2Dispatch d{.kernel = single(g.ops[at].role, mode), .layer = g.ops[at].layer, .first = at, .count = 1};
      for (const Rule& r : kRules)
        if (r.applies(f, mode) && matches(g, at, end, r)) {
          d.kernel = r.kernel;
          d.count = r.roles.size();
          break;
        }
      for (size_t k = at; k < at + d.count; k++) d.label += (k == at ? "" : " + ") + g.ops[k].path;
      plan.steps.push_back(std::move(d));
      at += plan.steps.back().count;
    }
  };
  plan_range(0, g.layer_begin.front());
  plan.layers_begin = plan.steps.size();
  for (size_t i = 0; i + 1 < g.layer_begin.size(); i++) plan_range(g.layer_begin[i], g.layer_begin[i + 1]);
  plan.head_begin = plan.steps.size();
  // The head reads the last token's row of x. A prefill copies it out first; so does a decode
  // step whose head does not read x itself (no norm prologue). The batched step's head runs on
  // every row.
  const bool head_reads_x = mode == M::decode && f.norm_prologue;
  if (mode != M::batched && !head_reads_x)
    plan.steps.push_back({.kernel = K::last_row, .first = g.head_begin, .count = 0, .label = "x[last token]"});
  plan_range(g.head_begin, g.ops.size());
  return plan;
}

}  // namespace ember::llm
