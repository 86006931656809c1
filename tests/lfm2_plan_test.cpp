// The fusion planner's dispatch lists for the tiny pack (conv, attention, conv, attention) under
// several candidates, written out op by op from the graph: a fusion rule that stops matching, or
// matches ops it should not, changes a label and fails here. The default candidate's lists are the
// dispatches the model recorded before the planner existed (same kernels, same order), which is
// what keeps its speed; the recorded dispatch counts are checked against the lists.
#include <gtest/gtest.h>

#include <random>

#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/lfm2_batch.h"
#include "llm/lfm2_model.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

std::string L(int i, const std::string& op) { return "model.layers." + std::to_string(i) + "." + op; }
std::string join(std::initializer_list<std::string> parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : " + ") + p;
  return s;
}

struct Expect {
  bool decode = true, prefill = false, batched = false;
  bool norm_prologue = true, conv_in_proj = true, gated = true, mlp_pair = false, qk_fuse = true, qk_in_attention = false;
};

// What the graph says a layer's dispatches are under the fusions `e`, op by op.
std::vector<std::string> layer_steps(int i, bool attn, const Expect& e) {
  std::vector<std::string> out;
  const bool dec = e.decode, pre = e.prefill, bat = e.batched;
  const std::string linear = dec ? "matvec " : pre ? "matmul " : "matvec_batch ";
  const bool np = dec && e.norm_prologue;
  const std::string mix_in = attn ? L(i, "self_attn.qkv_proj") : L(i, "conv.in_proj");
  if (!attn && dec && e.conv_in_proj) {
    out.push_back("matvec_conv " + (np ? join({L(i, "operator_norm"), mix_in, L(i, "conv.conv")}) : join({mix_in, L(i, "conv.conv")})));
    if (!np) out.insert(out.begin(), "rms_norm " + L(i, "operator_norm"));
  } else {
    if (np) out.push_back("matvec " + join({L(i, "operator_norm"), mix_in}));
    else {
      out.push_back("rms_norm " + L(i, "operator_norm"));
      out.push_back(linear + mix_in);
    }
    if (!attn) out.push_back((pre ? "conv_prefill " : "conv_step ") + L(i, "conv.conv"));
  }
  if (attn) {
    const std::string q = L(i, "self_attn.q_layernorm"), k = L(i, "self_attn.k_layernorm"), r = L(i, "self_attn.rope"),
                      kv = L(i, "self_attn.kv_cache"), a = L(i, "self_attn.attention");
    if (!pre && e.qk_in_attention) {
      out.push_back("attention_decode " + join({q, k, r, kv, a}));
    } else {
      if (bat || e.qk_fuse) out.push_back("qk_norm_rope_kv " + join({q, k, r, kv}));
      else
        for (const std::string& step : {"q_norm " + q, "k_norm " + k, "rope " + r, "kv_write " + kv}) out.push_back(step);
      out.push_back((pre ? "attention_prefill " : "attention_decode ") + a);
    }
  }
  out.push_back(linear + (attn ? L(i, "self_attn.out_proj") : L(i, "conv.out_proj")));
  const std::string fn = L(i, "ffn_norm"), gu = L(i, "feed_forward.w1_w3"), sm = L(i, "feed_forward.silu_mul"), w2 = L(i, "feed_forward.w2");
  if (!pre && e.mlp_pair) {
    if (np) out.push_back("mlp " + join({fn, gu, sm, w2}));
    else {
      out.push_back("rms_norm " + fn);
      out.push_back("mlp " + join({gu, sm, w2}));
    }
    return out;
  }
  if (!np) out.push_back("rms_norm " + fn);
  if (e.gated && !bat) out.push_back((dec ? "matvec_gated " : "matmul_gated ") + (np ? join({fn, gu, sm}) : join({gu, sm})));
  else {
    out.push_back(linear + (np ? join({fn, gu}) : gu));
    out.push_back("silu_mul " + sm);
  }
  out.push_back(linear + w2);
  return out;
}

std::vector<std::string> expected(const formats::LlmShape& s, const Expect& e) {
  std::vector<std::string> out{"embed model.embed_tokens"};
  for (int i = 0; i < static_cast<int>(s.layers()); i++)
    for (auto& step : layer_steps(i, s.layer_types[i] == formats::LayerType::Attention, e)) out.push_back(step);
  if (e.batched) {
    out.push_back("rms_norm model.embedding_norm");
    out.push_back("matvec_batch lm_head");
  } else if (e.norm_prologue) {
    if (e.prefill) out.push_back("last_row x[last token]");
    out.push_back("matvec " + join({"model.embedding_norm", "lm_head"}));
  } else {
    out.push_back("last_row x[last token]");
    out.push_back("rms_norm model.embedding_norm");
    out.push_back("matvec lm_head");
  }
  return out;
}

struct PlanCase {
  const char* name;
  nlohmann::json patch;  // null: the tiny pack's own (default) candidate
  Expect fusions;
};

class Lfm2PlanTest : public ::testing::TestWithParam<PlanCase> {};

TEST_P(Lfm2PlanTest, DispatchListsAreTheGraphsOpsByModulePath) {
  const PlanCase& c = GetParam();
  fs::path dir = fs::temp_directory_path() / "ember_plan" / std::to_string(getpid()) / c.name;
  const fs::path tiny = test::lfm2_test_pack("tiny");
  auto pack = formats::LlmPack::open(c.patch.is_null() ? tiny : test::with_candidate(tiny, dir, c.patch));
  auto caches = llm::Lfm2Model::make_caches(test::test_device(), pack, 2);
  llm::Lfm2Model m(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 16, .quiet = true, .caches = caches});
  Expect e = c.fusions;
  // The one fusion that depends on the attention kernel this device takes.
  e.qk_in_attention = m.fusions().qk_in_attention;
  EXPECT_EQ(m.fusions().norm_prologue, e.norm_prologue);
  EXPECT_EQ(m.fusions().conv_in_proj, e.conv_in_proj);
  EXPECT_EQ(m.fusions().gated_matvec, e.gated && !e.mlp_pair);
  EXPECT_EQ(m.fusions().mlp_pair, e.mlp_pair);
  EXPECT_EQ(m.fusions().qk_fuse, e.qk_fuse);

  EXPECT_EQ(m.plan(llm::Lfm2Mode::decode).labels(), expected(m.shape(), e));
  Expect p = e;
  p.decode = false;
  p.prefill = true;
  p.gated = m.fusions().gated_matmul;
  EXPECT_EQ(m.plan(llm::Lfm2Mode::prefill).labels(), expected(m.shape(), p));

  // The batched step: the batched matvec takes no prologue or epilogue; the fused MLP runs per row.
  llm::Lfm2Model other(m, {.prefill_chunk = 16, .quiet = true, .caches = caches, .cache_slot = 1});
  llm::Lfm2BatchDecoder batch({&m, &other});
  Expect b = e;
  b.decode = false;
  b.batched = true;
  b.norm_prologue = false;
  b.gated = false;
  // (qk_in_attention as decode's: the batched attention is the same kernel over several caches)
  EXPECT_EQ(batch.plan().labels(), expected(m.shape(), b));

  // What the model records is the planned list: one dispatch a planned step, and more where a
  // kernel records a second pass (the fused MLP's fold, a split attention's merge).
  std::vector<uint32_t> ids(7);
  std::mt19937 rng(3);
  for (auto& id : ids) id = rng() % m.vocab();
  m.prefill(ids);
  EXPECT_GE(m.prefill_dispatches(), m.plan(llm::Lfm2Mode::prefill).dispatches());
  EXPECT_LE(m.prefill_dispatches(), m.plan(llm::Lfm2Mode::prefill).dispatches() + m.shape().layers());
  gpu::Recorder rec(m.device());
  m.record_decode(rec);
  rec.submit();
  if (c.patch.is_null()) {
    EXPECT_EQ(m.decode_dispatches(), m.plan(llm::Lfm2Mode::decode).dispatches());
  }
  EXPECT_GE(m.decode_dispatches(), m.plan(llm::Lfm2Mode::decode).dispatches());
  EXPECT_LE(m.decode_dispatches(), m.plan(llm::Lfm2Mode::decode).dispatches() + m.shape().layers());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Candidates, Lfm2PlanTest,
                         ::testing::Values(PlanCase{"defaults", nullptr, {}},
                                           PlanCase{"mlp_pair", {{"mlpPair", true}}, {.mlp_pair = true}},
                                           PlanCase{"unfused",
                                                    {{"unfused", true}},
                                                    {.norm_prologue = false, .conv_in_proj = false, .gated = false, .qk_fuse = false}}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
