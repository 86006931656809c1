// The whole LFM2 model on the GPU against the CPU reference forward (tests/reference), on packs
// made by the real synthesizer and packer: prompt logits, decode logits, greedy tokens, the
// prefill/decode agreement and every kernel choice the candidate format allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "common/error.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/cpu_kernel_defaults.h"
#include "llm/kernel_choice.h"
#include "llm/lfm2_model.h"
#include "llm/lfm2_weights.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

constexpr double kLogitTolerance = 1e-3;  // issue 4: GPU vs reference logits, rel L2

std::vector<uint32_t> prompt_ids(uint32_t vocab, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> ids(n);
  for (auto& id : ids) id = rng() % vocab;
  return ids;
}

uint32_t argmax(const std::vector<float>& v) { return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

std::vector<float> gpu_logits(llm::Lfm2Model& m) { return m.device().download_as<float>(m.logits()); }

// Feeds `token` at the model's position through the decode path; returns the logits.
std::vector<float> decode(llm::Lfm2Model& m, uint32_t token) {
  m.device().upload(m.tokens(), std::span<const uint32_t>(&token, 1), uint64_t(m.position()) * 4);
  gpu::Recorder rec(m.device());
  m.record_decode(rec);
  rec.submit();
  return gpu_logits(m);
}

// Prompt of `n_prompt` tokens, then `n_decode` greedy steps: GPU and reference agree at every
// step, and pick the same tokens.
void check_against_reference(const fs::path& pack_dir, size_t n_prompt, size_t n_decode, bool check_tokens) {
  auto pack = formats::LlmPack::open(pack_dir);
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true});
  auto weights = test::reference_weights(pack, model.choices().down_copy());
  reference::Lfm2Reference ref(weights);
  auto ids = prompt_ids(model.vocab(), n_prompt, 11);
  std::vector<float> ref_logits;
  for (uint32_t id : ids) ref_logits = ref.step(id);
  model.prefill(ids);
  auto got = gpu_logits(model);
  EXPECT_LT(test::rel_l2(got, ref_logits), kLogitTolerance) << "prompt logits";
  for (size_t i = 0; i < n_decode; i++) {
    uint32_t next = argmax(ref_logits);
    if (check_tokens) {
      ASSERT_EQ(argmax(got), next) << "greedy token at step " << i;
    }
    ref_logits = ref.step(next);
    got = decode(model, next);
    ASSERT_LT(test::rel_l2(got, ref_logits), kLogitTolerance) << "decode step " << i;
  }
}

}  // namespace

TEST(Lfm2Engine, TinyMatchesReferenceOverPromptAndDecode) {
  check_against_reference(test::lfm2_test_pack("tiny"), 20, 32, /*check_tokens=*/true);
}

TEST(Lfm2Engine, PrefillEqualsDecodeOneByOne) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  auto ids = prompt_ids(static_cast<uint32_t>(pack.shape().vocab), 20, 5);
  llm::Lfm2Model a(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 7, .quiet = true});
  a.prefill(ids);
  auto prefilled = gpu_logits(a);
  llm::Lfm2Model b(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 7, .quiet = true});
  b.prefill(std::span<const uint32_t>(ids).first(1));
  std::vector<float> one_by_one;
  for (size_t i = 1; i < ids.size(); i++) one_by_one = decode(b, ids[i]);
  EXPECT_LT(test::rel_l2(prefilled, one_by_one), 1e-4);
  // A reset starts a new sequence: the same prompt gives the same logits again.
  a.reset();
  a.prefill(ids);
  EXPECT_LT(test::rel_l2(gpu_logits(a), prefilled), 1e-6);
}

// With the fused decode MLP (mlpPair: down.kquant is the model's down weight) prefill runs the
// k-major matmul and decode the fused kernel: both must compute the same model.
TEST(Lfm2Engine, PrefillEqualsDecodeWithFusedMlp) {
  fs::path dir = fs::temp_directory_path() / "ember_candidates" / std::to_string(getpid()) / "prefill_mlp_pair";
  auto pack = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"mlpPair", true}}));
  auto ids = prompt_ids(static_cast<uint32_t>(pack.shape().vocab), 20, 6);
  llm::Lfm2Model a(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 7, .quiet = true});
  ASSERT_TRUE(a.choices().mlp_pair);
  a.prefill(ids);
  auto prefilled = gpu_logits(a);
  llm::Lfm2Model b(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 7, .quiet = true});
  b.prefill(std::span<const uint32_t>(ids).first(1));
  std::vector<float> one_by_one;
  for (size_t i = 1; i < ids.size(); i++) one_by_one = decode(b, ids[i]);
  EXPECT_LT(test::rel_l2(prefilled, one_by_one), 1e-4);
  fs::remove_all(dir);
}

// The prefill gate_up matmul applies silu * up itself (no silu_mul dispatch); a split-K
// geometry cannot, and keeps the separate activation after its sum pass: two dispatches more per
// layer, the same logits.
TEST(Lfm2Engine, PrefillGateUpEpilogueSavesTheActivationDispatch) {
  fs::path dir = fs::temp_directory_path() / "ember_candidates" / std::to_string(getpid()) / "prefill_gated";
  const nlohmann::json split = {{"mlp_gate_up", {{"wgTokens", 8}, {"wgRows", 8}, {"kStep", 16}, {"micro", 4}, {"kSplits", 2}}}};
  auto gated = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  auto ungated = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"prefillMatmul", split}}));
  const auto ids = prompt_ids(gated.shape().vocab, 21, 4);
  llm::Lfm2Model a(test::test_device(), test::test_kernels(), gated, {.prefill_chunk = 32, .quiet = true});
  llm::Lfm2Model b(test::test_device(), test::test_kernels(), ungated, {.prefill_chunk = 32, .quiet = true});
  a.prefill(ids);
  b.prefill(ids);
  EXPECT_EQ(b.prefill_dispatches(), a.prefill_dispatches() + 2 * gated.shape().layers());
  EXPECT_LT(test::rel_l2(gpu_logits(a), gpu_logits(b)), 1e-4);
  fs::remove_all(dir);
}

// A prefill chunk records O(layers) dispatches whatever its length and MLP choice.
TEST(Lfm2Engine, PrefillDispatchesDoNotGrowWithTokens) {
  fs::path dir = fs::temp_directory_path() / "ember_candidates" / std::to_string(getpid()) / "prefill_dispatches";
  auto pack = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"mlpPair", true}}));
  const size_t layers = pack.shape().layers();
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 64, .quiet = true});
  model.prefill(prompt_ids(model.vocab(), 3, 1));
  const size_t short_prompt = model.prefill_dispatches();
  model.reset();
  model.prefill(prompt_ids(model.vocab(), 40, 2));
  EXPECT_EQ(model.prefill_chunks(), 1u);
  EXPECT_EQ(model.prefill_dispatches(), short_prompt);
  EXPECT_LE(model.prefill_dispatches(), 12 * layers + 4);
  fs::remove_all(dir);
}

// Every variant and geometry the candidate format allows, the fused MLP and the unfused path.
struct CandidateCase {
  const char* name;
  nlohmann::json patch;
};

class Lfm2CandidateTest : public ::testing::TestWithParam<CandidateCase> {};

TEST_P(Lfm2CandidateTest, MatchesReference) {
  fs::path base = test::lfm2_test_pack("tiny");
  fs::path dir = fs::temp_directory_path() / "ember_candidates" / std::to_string(getpid()) / GetParam().name;
  nlohmann::json patch = GetParam().patch;
  check_against_reference(test::with_candidate(base, dir, patch), 9, 4, /*check_tokens=*/false);
  fs::remove_all(dir);
}

namespace {
nlohmann::json matvec_all(const char* variant, int wg, int sg, int rows, int per_row) {
  nlohmann::json m;
  for (const char* k : {"attn_qkv", "attn_o_proj", "conv_in_proj", "conv_out_proj", "mlp_gate_up", "mlp_down", "head"})
    m[k] = {{"geometry", {{"workgroupSize", wg}, {"subgroupSize", sg}, {"rowsPerSubgroup", rows}, {"subgroupsPerRow", per_row}}},
            {"variant", variant}};
  return m;
}
}  // namespace

INSTANTIATE_TEST_SUITE_P(
    Candidates, Lfm2CandidateTest,
    ::testing::Values(CandidateCase{"carried_8_1", {{"matvec", matvec_all("carried", 64, 8, 1, 1)}}},
                      CandidateCase{"carried_8_4", {{"matvec", matvec_all("carried", 256, 8, 4, 1)}}},
                      CandidateCase{"v3_both_8_2", {{"matvec", matvec_all("v3_both", 128, 8, 2, 1)}}},
                      CandidateCase{"v3_both_4_2rows", {{"matvec", matvec_all("v3_both", 64, 4, 8, 2)}}},
                      CandidateCase{"carried_16_lanes", {{"matvec", matvec_all("carried", 128, 16, 3, 1)}}},
                      CandidateCase{"split_block_16_lanes", {{"matvec", matvec_all("split_block", 128, 16, 2, 1)}}},
                      CandidateCase{"mlp_pair", {{"mlpPair", true}, {"mlpSlices", 5}, {"mlpWorkgroup", 128}}},
                      CandidateCase{"flash_blocks", {{"flash", true}, {"flashBlocks", 4}}},
                      CandidateCase{"kv_padding", {{"padding", 3}}},
                      CandidateCase{"unfused", {{"unfused", true}, {"mlpPair", true}}},
                      CandidateCase{"prefill_geometries",
                                    {{"mlpPair", true},
                                     {"prefillMatmul", {{"mlp_down", {{"wgTokens", 4}, {"wgRows", 8}, {"kStep", 32}}},
                                                        {"mlp_gate_up", {{"wgTokens", 8}, {"wgRows", 2}, {"kStep", 8}}},
                                                        {"attn_qkv", {{"wgTokens", 2}, {"wgRows", 16}, {"kStep", 16}}},
                                                        {"conv_in_proj", {{"wgTokens", 8}, {"wgRows", 8}, {"kStep", 16}, {"micro", 4}}}}}}},
                      CandidateCase{"prefill_split_k",
                                    {{"prefillMatmul", {{"mlp_down", {{"wgTokens", 4}, {"wgRows", 8}, {"kStep", 16}, {"kSplits", 2}}},
                                                        {"mlp_gate_up", {{"wgTokens", 8}, {"wgRows", 4}, {"kStep", 8}, {"kSplits", 3}}},
                                                        {"attn_o_proj", {{"wgTokens", 4}, {"wgRows", 4}, {"kStep", 32}, {"micro", 4}, {"vec4", true}, {"kSplits", 4}}},
                                                        {"conv_out_proj", {{"wgTokens", 8}, {"wgRows", 8}, {"kStep", 16}, {"kSplits", 2}}}}}}},
                      CandidateCase{"decode_prefetch", {{"decodePrefetch", true}}},
                      CandidateCase{"decode_prefetch_mlp_pair", {{"decodePrefetch", true}, {"mlpPair", true}, {"mlpSlices", 5}, {"mlpWorkgroup", 128}}},
                      CandidateCase{"decode_prefetch_split_block",
                                    {{"decodePrefetch", true}, {"matvec", matvec_all("split_block", 128, 16, 2, 1)}}},
                      CandidateCase{"norm_fuse_off", {{"normFuse", false}}},
                      CandidateCase{"flash_direct_64", {{"flashDirectWorkgroup", 64}}},
                      CandidateCase{"mlp_pair_f16",  // the seed's f16 options: f16 down products, gate dots in f32
                                    {{"mlpPair", true}, {"mlpSlices", 5}, {"mlpWorkgroup", 128}, {"mlpHalfDot", "gate"}, {"mlpHalfProduct", "down"}}},
                      CandidateCase{"mlp_pair_norm_fuse_off", {{"mlpPair", true}, {"mlpSlices", 7}, {"mlpWorkgroup", 64}, {"normFuse", false}}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Lfm2Engine, PromptLongerThanTheCacheIsAClearError) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  std::vector<uint32_t> ids(model.capacity() + 1, 1);
  try {
    model.prefill(ids);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxTotalPositions"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model.position(), 0u);
}

TEST(Lfm2Engine, SeedShapeMatchesReference) {
  check_against_reference(test::lfm2_test_pack("seed"), 20, 32, /*check_tokens=*/false);
}

// What a decode step costs in dispatches with the default fusions: embed and head (the head norm
// fused in), per conv layer in_proj (op norm and conv step fused), out_proj and 2 for the MLP (gated
// gate_up + down, or fused MLP + fold), per attention layer qkv, qk_norm_rope_kv, attention (1
// dispatch with one flash block, else 2), o_proj and the MLP's 2. The unfused reference path
// records more.
TEST(Lfm2Engine, DecodeDispatchCount) {
  for (bool unfused : {false, true}) {
    fs::path dir = fs::temp_directory_path() / "ember_dispatch_count" / std::to_string(getpid());
    auto p = unfused ? test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"unfused", true}}) : test::lfm2_test_pack("tiny");
    auto pk = formats::LlmPack::open(p);
    llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
    m.prefill(prompt_ids(m.vocab(), 3, 1));
    const uint32_t blocks = m.choices().blocks_for(m.position() + 1);
    decode(m, 1);
    size_t expected = 2;
    for (auto t : pk.shape().layer_types) expected += t == formats::LayerType::Conv ? 4 : 5 + (blocks == 1 ? 1 : 2);
    if (unfused) EXPECT_GT(m.decode_dispatches(), expected);
    else EXPECT_EQ(m.decode_dispatches(), expected) << "blocks " << blocks;
    fs::remove_all(dir);
  }
}

// The seed shape's one-block decode attention at the narrowest width (candidate
// flashDirectWorkgroup 64, the tile workgroup: 16 keys a round, so 26 keys take two rounds)
// gives the default width's logits.
TEST(Lfm2Engine, SeedShapeDirectAttentionWidthKeepsTheLogits) {
  if (!test::test_device().has_subgroups()) GTEST_SKIP() << "the width is the quad kernel's (subgroups)";
  fs::path dir = fs::temp_directory_path() / "ember_direct_width" / std::to_string(getpid());
  int runs = 0;
  auto run = [&](nlohmann::json extra) {
    extra["flash"] = false;  // one block at every length
    auto pk = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("seed"), dir / std::to_string(runs++), extra));
    llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
    EXPECT_EQ(m.choices().blocks_for(26), 1u);
    m.prefill(prompt_ids(m.vocab(), 24, 4));
    std::vector<float> logits;
    for (uint32_t id : {5u, 9u}) logits = decode(m, id);
    return std::make_pair(logits, m.choices().flash_direct_workgroup);
  };
  auto [wide, wide_width] = run(nlohmann::json::object());
  auto [narrow, narrow_width] = run({{"flashDirectWorkgroup", 64}});
  EXPECT_EQ(wide_width, 0u);
  EXPECT_EQ(narrow_width, 64u);
  EXPECT_LT(test::rel_l2(narrow, wide), 1e-5);
  fs::remove_all(dir);
}

// A one-block attention width the adapter cannot run is a warning and the default.
TEST(Lfm2Engine, DirectAttentionWidthOutOfRangeFallsBackWithAWarning) {
  fs::path dir = fs::temp_directory_path() / "ember_direct_width_bad" / std::to_string(getpid());
  for (nlohmann::json bad : {nlohmann::json(100), nlohmann::json(32), nlohmann::json(1u << 20), nlohmann::json("wide")}) {
    auto pk = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"flashDirectWorkgroup", bad}}));
    auto k = llm::choose_kernels(pk, test::test_device());
    EXPECT_EQ(k.flash_direct_workgroup, 0u) << bad;
    ASSERT_FALSE(k.warnings.empty()) << bad;
    EXPECT_NE(k.warnings.back().find("flashDirectWorkgroup"), std::string::npos) << k.warnings.back();
  }
  fs::remove_all(dir);
}

// A CPU adapter: a candidate tuned on another adapter gets the CPU geometry for every matvec and
// no residual-MLP grid (its workgroups wait on each other, which a few threads cannot run at once),
// with a warning; a candidate tuned nowhere keeps the shapes it lists and gets the CPU geometry
// for the rest (not the knee). The model still matches the reference (Candidates/*).
TEST(Lfm2Engine, CpuAdapterDefaultsReplaceGeometriesTunedElsewhere) {
  const auto& dev = test::test_device();
  if (dev.adapter().type != "CPU") GTEST_SKIP() << "a CPU adapter's defaults";
  fs::path dir = fs::temp_directory_path() / "ember_cpu_defaults" / std::to_string(getpid());
  const nlohmann::json gpu_matvec = {{"geometry", {{"workgroupSize", 256}, {"subgroupSize", 32}, {"rowsPerSubgroup", 2}, {"subgroupsPerRow", 1}}},
                                     {"variant", "carried"}};
  const auto cpu_geometry = llm::cpu_matvec_geometry(dev);
  auto is_cpu = [&](const llm::KernelChoices::Matvec& m) {
    return m.variant == kernels::Q4Variant::v3_both && m.geometry.workgroup_size == cpu_geometry.workgroup_size &&
           m.geometry.subgroup_size == cpu_geometry.subgroup_size && m.geometry.rows_per_subgroup == cpu_geometry.rows_per_subgroup &&
           m.geometry.subgroups_per_row == 1;
  };
  EXPECT_EQ(cpu_geometry.workgroup_size, std::max<uint32_t>(4, std::min<uint32_t>(32, dev.subgroup_size())));

  auto elsewhere = formats::LlmPack::open(test::with_candidate(
      test::lfm2_test_pack("tiny"), dir / "elsewhere",
      {{"adapter", "NVIDIA H200"}, {"matvec", {{"head", gpu_matvec}, {"mlp_down", gpu_matvec}}}, {"residualMlpWorkgroups", 64}}));
  EXPECT_TRUE(llm::cpu_defaults(elsewhere, dev));
  auto k = llm::choose_kernels(elsewhere, dev);
  for (const auto& [shape, m] : k.matvec) EXPECT_TRUE(is_cpu(m)) << shape;
  EXPECT_EQ(k.residual_mlp_workgroups, 0u);
  ASSERT_FALSE(k.warnings.empty());
  EXPECT_NE(k.warnings.front().find("CPU adapter's defaults"), std::string::npos) << k.warnings.front();

  auto nowhere = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir / "nowhere", {{"matvec", {{"head", gpu_matvec}}}}));
  EXPECT_FALSE(llm::cpu_defaults(nowhere, dev));
  auto n = llm::choose_kernels(nowhere, dev);
  EXPECT_EQ(n.matvec_for("head").variant, kernels::Q4Variant::carried);
  EXPECT_EQ(n.matvec_for("head").geometry.workgroup_size, 256u);
  for (const auto& [shape, m] : n.matvec)
    if (shape != "head") {
      EXPECT_TRUE(is_cpu(m)) << shape;
    }

  auto here = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir / "here",
                                                          {{"adapter", dev.adapter().name()}, {"matvec", {{"head", gpu_matvec}}}}));
  EXPECT_FALSE(llm::cpu_defaults(here, dev));
  EXPECT_EQ(llm::choose_kernels(here, dev).matvec_for("head").geometry.workgroup_size, 256u);
  fs::remove_all(dir);
}

// The fused MLP's f16 down products (the seed's mlpHalfProduct "down") run where the adapter has
// shader-f16 (lavapipe does; the logits are checked in Candidates/mlp_pair_f16); else, or for a
// value that names another step, f32 with a warning. mlpHalfDot is read and not honoured.
TEST(Lfm2Engine, HalfMlpProductsNeedShaderF16) {
  fs::path dir = fs::temp_directory_path() / "ember_half_mlp" / std::to_string(getpid());
  nlohmann::json half = {{"mlpPair", true}, {"mlpHalfDot", "gate"}, {"mlpHalfProduct", "down"}};
  auto pk = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir / "half", half));
  auto k = llm::choose_kernels(pk, test::test_device());
  EXPECT_TRUE(k.mlp_half_product);
  EXPECT_TRUE(k.warnings.empty()) << k.warnings.front();

  gpu::Device no_f16 = gpu::Device::open({.without = {"shader-f16"}});
  auto f32 = llm::choose_kernels(pk, no_f16);
  EXPECT_FALSE(f32.mlp_half_product);
  ASSERT_EQ(f32.warnings.size(), 1u);
  EXPECT_NE(f32.warnings.front().find("shader-f16"), std::string::npos) << f32.warnings.front();

  auto other = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir / "other", {{"mlpPair", true}, {"mlpHalfProduct", "gate"}}));
  auto ko = llm::choose_kernels(other, test::test_device());
  EXPECT_FALSE(ko.mlp_half_product);
  ASSERT_EQ(ko.warnings.size(), 1u);
  EXPECT_NE(ko.warnings.front().find("mlpHalfProduct"), std::string::npos) << ko.warnings.front();
  fs::remove_all(dir);
}

// Head size 64 (the seed shape) with subgroups: the decode attention norms and rotates q/k and
// appends k/v itself (candidate qkInAttention, default on), one dispatch per attention layer
// fewer; the switch off brings the separate qk_norm_rope_kv dispatch back. (The reference-logit
// test of the seed shape runs the fused path.)
TEST(Lfm2Engine, SeedShapeDecodeNormsQkInsideTheAttention) {
  if (!test::test_device().has_subgroups()) GTEST_SKIP() << "the fused path is the quad kernel's (subgroups)";
  for (bool fused : {true, false}) {
    fs::path dir = fs::temp_directory_path() / "ember_qk_in_attention" / std::to_string(getpid());
    auto p = fused ? test::lfm2_test_pack("seed") : test::with_candidate(test::lfm2_test_pack("seed"), dir, {{"qkInAttention", false}});
    auto pk = formats::LlmPack::open(p);
    llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
    m.prefill(prompt_ids(m.vocab(), 3, 1));
    const uint32_t blocks = m.choices().blocks_for(m.position() + 1);
    decode(m, 1);
    size_t expected = 2;
    for (auto t : pk.shape().layer_types) expected += t == formats::LayerType::Conv ? 4 : (fused ? 4 : 5) + (blocks == 1 ? 1 : 2);
    EXPECT_EQ(m.decode_dispatches(), expected) << (fused ? "fused" : "qkInAttention false");
    fs::remove_all(dir);
  }
}

// Candidate residualMlpWorkgroups: each layer's out projection, ffn norm and MLP run as one
// dispatch of that many workgroups (kernels::ResidualMlpQ4), 2 dispatches fewer per layer, and
// the logits still follow the reference over prompt and greedy decode (several steps: the scratch
// words' tag parity alternates). Two workgroups wait for each other's words (lavapipe runs them on
// its two cores).
TEST(Lfm2Engine, ResidualMlpInOneDispatchMatchesReference) {
  fs::path dir = fs::temp_directory_path() / "ember_residual_mlp" / std::to_string(getpid());
  const uint32_t workgroups = std::thread::hardware_concurrency() >= 2 ? 2 : 1;
  auto p = test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"residualMlpWorkgroups", workgroups}});
  check_against_reference(p, 6, 10, /*check_tokens=*/true);
  auto pk = formats::LlmPack::open(p);
  llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
  ASSERT_TRUE(m.residual_mlp()) << (m.choices().warnings.empty() ? "" : m.choices().warnings.back());
  m.prefill(prompt_ids(m.vocab(), 3, 1));
  const uint32_t blocks = m.choices().blocks_for(m.position() + 1);
  decode(m, 1);
  size_t expected = 2;
  for (auto t : pk.shape().layer_types) expected += t == formats::LayerType::Conv ? 2 : 3 + (blocks == 1 ? 1 : 2);
  EXPECT_EQ(m.decode_dispatches(), expected);
  EXPECT_FALSE(m.residual_mlp_failed());
  fs::remove_all(dir);
}

// With decodePrefetch (on by default on GPUs, off on lavapipe) each layer's one dispatch also reads
// the next layer's mix-in weights, the last one the head's first rows: the logits stay the same.
TEST(Lfm2Engine, ResidualMlpReadingAheadMatchesReference) {
  fs::path dir = fs::temp_directory_path() / "ember_residual_mlp_prefetch" / std::to_string(getpid());
  const uint32_t workgroups = std::thread::hardware_concurrency() >= 2 ? 2 : 1;
  auto p = test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"residualMlpWorkgroups", workgroups}, {"decodePrefetch", true}});
  check_against_reference(p, 6, 10, /*check_tokens=*/true);
  auto pk = formats::LlmPack::open(p);
  llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
  EXPECT_TRUE(m.residual_mlp());
  EXPECT_TRUE(m.choices().prefetch);
  fs::remove_all(dir);
}

// A pack larger than one storage binding may span continues in further weights buffers: every
// section reads back as the pack holds it, and a model on them gives the same logits; its
// one-dispatch residual MLP, whose layers' matrices then sit in different buffers, falls back to the
// separate dispatches with a warning instead of failing the load.
TEST(Lfm2Engine, WeightsInSeveralBuffersKeepTheLogits) {
  fs::path dir = fs::temp_directory_path() / "ember_split_weights" / std::to_string(getpid());
  auto& dev = test::test_device();
  auto pack = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"residualMlpWorkgroups", 1}}));
  auto whole = std::make_shared<const llm::Lfm2Weights>(dev, pack);
  auto split = std::make_shared<const llm::Lfm2Weights>(dev, pack, nullptr, 16 * 1024);
  EXPECT_EQ(whole->buffers(), 1u);
  EXPECT_GT(split->buffers(), 4u);
  for (const auto& s : pack.runtime().sections) {
    const gpu::Binding b = split->section(s.name);
    auto bytes = dev.download(*b.buffer, b.offset, (s.bytes + 3) / 4 * 4);
    bytes.resize(s.bytes);
    const auto want = pack.section(s.name);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), want.begin(), want.end())) << s.name;
  }
  std::vector<std::vector<float>> logits;
  for (const auto& weights : {whole, split}) {
    llm::Lfm2Model m(dev, test::test_kernels(), pack, weights, {.prefill_chunk = 8, .quiet = true});
    EXPECT_EQ(m.residual_mlp(), weights == whole);
    if (weights == split) {
      ASSERT_FALSE(m.choices().warnings.empty());
      EXPECT_NE(m.choices().warnings.back().find("different buffers"), std::string::npos) << m.choices().warnings.back();
    }
    m.prefill(prompt_ids(m.vocab(), 5, 4));
    for (uint32_t id : {5u, 9u, 3u}) logits.push_back(decode(m, id));
  }
  for (size_t i = 0; i < 3; i++) EXPECT_LT(test::rel_l2(logits[3 + i], logits[i]), 1e-5) << "step " << i;
  fs::remove_all(dir);
}

// The seed shape's matrices (hidden 1024, ffn 2560: three blocks a lane in down) through the one
// dispatch give the separate dispatches' logits; on a GPU with a grid of 64 workgroups.
TEST(Lfm2Engine, SeedShapeResidualMlpKeepsTheLogits) {
  const bool cpu = test::test_device().adapter().type == "CPU";
  const uint32_t workgroups = !cpu ? 64 : std::thread::hardware_concurrency() >= 2 ? 2 : 1;
  fs::path dir = fs::temp_directory_path() / "ember_residual_mlp_seed" / std::to_string(getpid());
  int runs = 0;
  auto run = [&](nlohmann::json extra) {
    auto pk = formats::LlmPack::open(test::with_candidate(test::lfm2_test_pack("seed"), dir / std::to_string(runs++), extra));
    llm::Lfm2Model m(test::test_device(), test::test_kernels(), pk, {.prefill_chunk = 8, .quiet = true});
    m.prefill(prompt_ids(m.vocab(), 5, 4));
    std::vector<float> logits;
    for (uint32_t id : {5u, 9u, 3u}) logits = decode(m, id);
    EXPECT_FALSE(m.residual_mlp_failed());
    return std::make_pair(logits, m.residual_mlp());
  };
  auto [separate, separate_on] = run(nlohmann::json::object());
  auto [fused, fused_on] = run({{"residualMlpWorkgroups", workgroups}});
  EXPECT_FALSE(separate_on);
  EXPECT_TRUE(fused_on);
  EXPECT_LT(test::rel_l2(fused, separate), 1e-5);
  fs::remove_all(dir);
}
