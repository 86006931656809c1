// ember tune and ember bench llm on lavapipe with the tiny pack: a short-budget tune writes a
// runtime.json that LlmPack::open accepts and whose kernels still reproduce the CPU reference
// logits; the benchmark's JSON has the documented fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/atomic_file.h"
#include "common/error.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "q4_gpu.h"
#include "llm/cpu_kernel_defaults.h"
#include "llm/generator.h"
#include "llm/kernel_choice.h"
#include "llm/lfm2_model.h"
#include "llm/lfm2_weights.h"
#include "tune/ceilings.h"
#include "tune/check.h"
#include "tune/flash_search.h"
#include "tune/llm_bench.h"
#include "tune/mlp_search.h"
#include "tune/residual_mlp_search.h"
#include "tune/tuner.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return fs::temp_directory_path() / "ember_tune_test" / std::to_string(getpid()) / name; }

// Prompt then greedy decode steps: the GPU logits stay within the engine tests' tolerance.
void expect_matches_reference(const fs::path& dir) {
  auto pack = formats::LlmPack::open(dir);
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true});
  EXPECT_TRUE(model.choices().warnings.empty()) << model.choices().warnings.front();
  auto weights = test::reference_weights(pack, model.choices().down_copy());
  reference::Lfm2Reference ref(weights);
  std::mt19937 rng(3);
  std::vector<uint32_t> ids(9);
  for (auto& id : ids) id = rng() % model.vocab();
  std::vector<float> want;
  for (uint32_t id : ids) want = ref.step(id);
  model.prefill(ids);
  EXPECT_LT(test::rel_l2(model.device().download_as<float>(model.logits()), want), 1e-3) << "prompt logits";
  for (int step = 0; step < 4; step++) {
    uint32_t next = static_cast<uint32_t>(std::max_element(want.begin(), want.end()) - want.begin());
    want = ref.step(next);
    model.device().upload(model.tokens(), std::span<const uint32_t>(&next, 1), uint64_t(model.position()) * 4);
    gpu::Recorder rec(model.device());
    model.record_decode(rec);
    rec.submit();
    ASSERT_LT(test::rel_l2(model.device().download_as<float>(model.logits()), want), 1e-3) << "decode step " << step;
  }
}

tune::TuneResult tune_into(const fs::path& dir, double budget, bool allow_mlp_pair = false) {
  auto pack = formats::LlmPack::open(dir);
  tune::TuneOptions o;
  o.budget_s = budget;
  o.repeats = 2;
  o.allow_mlp_pair = allow_mlp_pair;
  auto r = tune::tune_llm(pack, test::test_device(), test::test_kernels(), o);
  tune::write_runtime_json(r.file, dir / "runtime.json", /*backup=*/true);
  return r;
}

// bench llm with the per-kernel profile at a test's size: a 12-token prompt, 4 steps, one repeat.
nlohmann::json small_profiled_bench(llm::Lfm2Model& model, std::vector<uint32_t> contexts) {
  llm::Generator gen(model);
  auto ceilings = tune::measure_ceilings(model.device(), model.kernels(), {.max_bytes = 1 << 20, .repeats = 1, .stage_groups = 1});
  tune::LlmBenchOptions o;
  o.prompt = 12;
  o.gen = 4;
  o.contexts = std::move(contexts);
  o.repeats = 1;
  o.profile = true;
  o.profile_steps = 1;
  return tune::bench_llm(model, gen, ceilings, o).to_json();
}

}  // namespace

TEST(Tune, ShortBudgetWritesAValidRuntimeThatMatchesTheReference) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("plain"), nlohmann::json::object());
  const std::string before = read_file(dir / "runtime.json");
  auto r = tune_into(dir, 0.5);
  // The budget is checked by what the search did, not by how long it took (a loaded machine stretches
  // any wall-clock bound): the matvec phase gets 0.29 s of a 0.5 s budget, about 40 ms a shape, and a
  // configuration costs a pipeline compile and repeated timings on lavapipe (about 10 ms on a quiet
  // machine), so a search that honours the budget reports hitting it and leaves most of each
  // shape's space untried.
  EXPECT_TRUE(r.budget_hit) << "a 0.5 s search of every configuration cannot finish: the budget was not applied";
  const size_t space = tune::matvec_space(test::test_device(), {}).size();
  EXPECT_EQ(r.matvec.size(), 7u);
  for (const auto& m : r.matvec) {
    EXPECT_LT(size_t(m.tried - m.invalid), space / 2) << m.shape.key << ": the search went on past its deadline";
    EXPECT_GT(m.reference.us, 0) << m.shape.key;
    EXPECT_LE(m.best.us, m.reference.us) << m.shape.key;
    // Every usable configuration's time is reported, fastest (the best) first.
    ASSERT_FALSE(m.timed.empty()) << m.shape.key;
    EXPECT_EQ(m.timed.front().us, m.best.us) << m.shape.key;
    EXPECT_TRUE(std::is_sorted(m.timed.begin(), m.timed.end(), [](const auto& a, const auto& b) { return a.us < b.us; })) << m.shape.key;
    EXPECT_EQ(m.to_json()["timed"].size(), m.timed.size()) << m.shape.key;
  }
  EXPECT_EQ(read_file(dir / "runtime.json.bak"), before);
  auto pack = formats::LlmPack::open(dir);  // validates
  const auto& c = pack.candidate();
  EXPECT_EQ(c.key, "ember-tune");
  EXPECT_EQ(c.extra.value("adapter", std::string()), test::test_device().adapter().name());
  EXPECT_FALSE(c.mlp_pair);  // kept from the input without --allow-mlp-pair
  for (const char* k : {"attn_qkv", "attn_o_proj", "conv_in_proj", "conv_out_proj", "mlp_gate_up", "mlp_down", "head"})
    EXPECT_NE(c.matvec_for(k), nullptr) << k;
  EXPECT_EQ(pack.runtime().expected_subgroup_size, int64_t(test::test_device().subgroup_size()));
  EXPECT_FALSE(pack.runtime().flash_optima.empty());
  EXPECT_TRUE(c.flash);
  EXPECT_FALSE(r.table().empty());
  EXPECT_TRUE(r.to_json().contains("matvec"));
  // The norm fusion phase ran last: what it measured agrees with norm + plain matvec; the decision
  // is written only when every shape was measured (lavapipe may run out of this short budget).
  ASSERT_TRUE(r.norm.has_value());
  for (const auto& s : r.norm->shapes) EXPECT_FALSE(s.rejected) << s.key << " rel_l2 " << s.rel_l2;
  EXPECT_EQ(c.extra.contains("normFuse"), !r.norm->budget_hit);
  expect_matches_reference(dir);
  fs::remove_all(dir);
}

// --allow-mlp-pair decides by whole decode steps (alone, the fused MLP can beat matvecs that the
// decode chain feeds from L2): the faster step is written, and the pack still reproduces the
// reference with the down copy it then makes the model's.
TEST(Tune, AllowMlpPairDecidesByTheWholeDecodeStep) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("allow_pair"), nlohmann::json::object());
  auto r = tune_into(dir, 3.0, /*allow_mlp_pair=*/true);
  ASSERT_TRUE(r.mlp.has_value());
  ASSERT_TRUE(r.mlp_pair_check.has_value());
  EXPECT_GT(r.mlp_pair_check->context, 0u);
  EXPECT_GT(r.mlp_pair_check->fused_step_us, 0);
  EXPECT_GT(r.mlp_pair_check->unfused_step_us, 0);
  EXPECT_EQ(r.mlp_pair, r.mlp_pair_check->fused_step_us < r.mlp_pair_check->unfused_step_us);
  EXPECT_TRUE(r.to_json().contains("mlp_pair_check"));
  auto pack = formats::LlmPack::open(dir);
  EXPECT_EQ(pack.candidate().mlp_pair, r.mlp_pair);
  // Each whole-step round's winner is what the file says.
  ASSERT_TRUE(r.step_check.has_value());
  ASSERT_FALSE(r.step_check->chosen.empty());
  EXPECT_TRUE(r.to_json().contains("step_check"));
  const auto& c = pack.candidate();
  for (const auto& chosen : r.step_check->chosen) {
    if (chosen.rfind("residualMlpWorkgroups ", 0) == 0)
      EXPECT_EQ(c.extra.value("residualMlpWorkgroups", -1), std::stoi(chosen.substr(22))) << chosen;
    else if (chosen.rfind("head ", 0) == 0) {
      const auto& g = c.matvec_for("head")->geometry;
      const tune::MatvecConfigChoice head{kernels::parse_q4_variant(c.matvec_for("head")->variant),
                                          {uint32_t(g.workgroup_size), uint32_t(g.subgroup_size), uint32_t(g.rows_per_subgroup),
                                           uint32_t(g.subgroups_per_row)}};
      EXPECT_EQ(chosen, "head " + head.describe());
    }
    else
      EXPECT_EQ(chosen == "fused MLP (mlpPair)", r.mlp_pair) << chosen;
  }
  EXPECT_EQ(c.extra.contains("residualMlpWorkgroups"), !r.mlp_pair && r.residual_mlp && !r.residual_mlp->tried.empty());
  EXPECT_EQ(std::string(pack.candidate().down_copy()), r.mlp_pair ? "kquant" : "quant");
  expect_matches_reference(dir);
  fs::remove_all(dir);
}

TEST(Tune, FusedMlpInputIsTunedAndKeepsKquantAsTheModel) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("pair"),
                                      {{"mlpPair", true}, {"mlpSlices", 5}, {"mlpWorkgroup", 128}});
  auto r = tune_into(dir, 2.0);
  ASSERT_TRUE(r.mlp.has_value());
  EXPECT_GT(r.mlp->tried, 0);
  auto pack = formats::LlmPack::open(dir);
  EXPECT_TRUE(pack.candidate().mlp_pair);
  EXPECT_EQ(std::string(pack.candidate().down_copy()), "kquant");
  EXPECT_GT(pack.candidate().mlp_slices, 0);
  expect_matches_reference(dir);
  fs::remove_all(dir);
}

// The norm-fusion search on the tiny pack's norm-reading shapes, given the time to finish: every
// fused matvec reproduces rmsnorm + plain matvec, is timed, and the decision follows the totals.
TEST(Tune, NormFusionSearchMeasuresEveryShape) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  const auto& dev = test::test_device();
  llm::Lfm2Weights weights(dev, pack);
  tune::KernelTimer timer(dev, test::test_kernels(), 0, 2);
  std::vector<tune::MatrixShape> shapes;
  std::vector<tune::MatvecConfigChoice> configs;
  std::vector<kernels::Q4Matrix> ws;
  for (const auto& s : tune::matrix_shapes(pack.shape()))
    if (s.key == "conv_in_proj" || s.key == "attn_qkv" || s.key == "head") {
      shapes.push_back(s);
      configs.push_back({kernels::Q4Variant::v3_both, {64, 8, 2, 1}});
      ws.push_back(weights.matrix(s.prefix, s.rows, s.cols));
    }
  ASSERT_FALSE(shapes.empty());
  auto r = tune::search_norm_fusion(test::test_kernels(), timer, shapes, configs, ws, float(pack.shape().eps()),
                                    tune::Clock::now() + std::chrono::hours(1), tune::Clock::duration::zero());
  ASSERT_EQ(r.shapes.size(), shapes.size());
  EXPECT_FALSE(r.budget_hit);
  for (const auto& s : r.shapes) {
    EXPECT_FALSE(s.rejected) << s.key << " rel_l2 " << s.rel_l2;
    EXPECT_LE(s.rel_l2, tune::kRejectRelL2) << s.key;
    EXPECT_GT(s.fused_us, 0) << s.key;
    EXPECT_GT(s.separate_us, 0) << s.key;
  }
  EXPECT_EQ(r.norm_fuse, r.fused_total_us <= r.separate_total_us);
  EXPECT_TRUE(r.to_json().contains("normFuse"));
}

TEST(Tune, CandidateTunedOnAnotherAdapterSaysSo) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("elsewhere"), {{"adapter", "NVIDIA H200"}});
  auto pack = formats::LlmPack::open(dir);
  auto k = llm::choose_kernels(pack, test::test_device());
  ASSERT_FALSE(k.warnings.empty());
  EXPECT_NE(k.warnings.front().find("NVIDIA H200"), std::string::npos) << k.warnings.front();
  fs::remove_all(dir);
}

// bench gpu --groups: the read runs over the grid asked for (short reads depend on it), and a grid
// of none is a clear error.
TEST(Ceilings, ReadUsesTheGridAskedFor) {
  auto c = tune::measure_ceilings(test::test_device(), test::test_kernels(), {.max_bytes = 1 << 20, .repeats = 1, .read_groups = 4, .stage_groups = 1});
  EXPECT_EQ(c.read_groups, 4u);
  EXPECT_EQ(c.bytes_read, double(1 << 20));
  EXPECT_GT(c.read_gbps, 0.0);
  EXPECT_EQ(c.to_json()["read_groups"], 4);
  EXPECT_GE(c.warmup_ms, 500.0) << "an idle GPU clocks up during the untimed reads first";
  EXPECT_GE(c.read_rounds, 2) << "a round is compared with the one before";
  EXPECT_LE(c.read_rounds, 8);
  EXPECT_GT(c.read_gbps_first, 0.0);
  EXPECT_EQ(c.to_json()["read_rounds"], c.read_rounds);
  EXPECT_THROW(tune::measure_ceilings(test::test_device(), test::test_kernels(), {.max_bytes = 1 << 20, .repeats = 1, .read_groups = 0}), Error);
}

// bench gpu's dependent stage: every workgroup reads the whole input (out = in / 2 + sum / 4096),
// whatever the grid, so a chain of them is a chain of dependent stages; its cost is measured, with
// and without weight bytes.
TEST(Ceilings, DependentStageReadsTheWholeInput) {
  auto& dev = test::test_device();
  const gpu::Kernel& stage = test::test_kernels().get({.file = "dependent_stage.wgsl"});
  for (uint32_t groups : {1u, 3u, 128u, 300u}) {
    auto in = test::random_floats(1024, groups);
    gpu::Buffer a = test::upload_floats(in, "in"), b = test::upload_floats(std::vector<float>(1024, test::kPoison), "out");
    gpu::Buffer no_weights = test::upload_floats(std::vector<float>(4, 0.0f), "weights");
    gpu::Recorder rec(dev);
    rec.dispatch(stage, test::test_kernels().bind(stage, {{&a}, {&b}, {&no_weights}}), groups);
    rec.submit();
    double sum = 0;
    for (float v : in) sum += v;
    std::vector<float> want(1024);
    for (size_t i = 0; i < want.size(); i++) want[i] = in[i] * 0.5f + static_cast<float>(sum / 4096);
    EXPECT_LE(test::rel_l2(dev.download_as<float>(b), want), test::kF32Tolerance) << groups << " groups";
  }
  auto c = tune::measure_ceilings(dev, test::test_kernels(), {.max_bytes = 1 << 20, .repeats = 1, .stage_groups = 5, .stage_bytes = 4000});
  EXPECT_EQ(c.stage_groups, 5u);
  EXPECT_EQ(c.stage_bytes, 4096.0);  // whole 256-byte units, so that every slice is a valid binding offset
  EXPECT_GT(c.stage_gpu_us, 0.0);
  EXPECT_EQ(c.to_json()["stage_groups"], 5);
  EXPECT_THROW(tune::measure_ceilings(dev, test::test_kernels(), {.max_bytes = 1 << 20, .repeats = 1, .stage_groups = 0}), Error);
}

TEST(BenchLlm, JsonHasTheDocumentedFields) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  auto j = small_profiled_bench(model, {8, 100000});
  for (const char* k : {"device", "ceilings", "statistic", "repeats", "prompt_tokens", "gen_tokens", "ttft_ms", "prefill_ms", "prefill_tok_s",
                        "prefill_gpu_ms", "dispatches_per_token", "weight_bytes_per_token", "down_copy", "contexts"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GT(j["ttft_ms"].get<double>(), 0);
  // The first-token warm-up runs for at least 500 ms of wall time (a fresh GPU clocks up first).
  EXPECT_GE(j["ttft_warmup_runs"].get<int>(), 1);
  EXPECT_GE(j["ttft_warmup_ms"].get<double>(), 500.0);
  EXPECT_GT(j["prefill_tok_s"].get<double>(), 0);
  EXPECT_EQ(j["dispatches_per_token"].get<size_t>(), model.decode_dispatches());
  EXPECT_EQ(j["weight_bytes_per_token"].get<uint64_t>(), model.decode_weight_bytes());
  // Prefill: one chunk, its dispatches all in the profile, every counted FLOP on a profiled kernel.
  EXPECT_EQ(j["prefill_chunks"].get<size_t>(), 1u);
  EXPECT_GT(j["prefill_tflops"].get<double>(), 0);
  if (test::test_device().has_timestamps()) {
    size_t prefill_dispatches = 0;
    double prefill_tflop = 0;
    for (const auto& k : j["prefill_profile"]) {
      prefill_dispatches += k["dispatches"].get<size_t>();
      prefill_tflop += k["tflop"].get<double>();
    }
    EXPECT_EQ(prefill_dispatches, j["prefill_dispatches"].get<size_t>());
    EXPECT_NEAR(prefill_tflop, j["prefill_tflop"].get<double>(), 1e-6 * j["prefill_tflop"].get<double>());
  }
  ASSERT_EQ(j["contexts"].size(), 2u);
  const auto& c = j["contexts"][0];
  for (const char* k : {"context", "decode_tok_s", "step_gpu_us", "gpu_tok_s", "step_wall_us", "bytes_per_token", "achieved_gbps", "floor_us",
                        "floor_tok_s", "bandwidth_floor_us", "dispatch_floor_us", "gpu_vs_floor", "dispatches_per_token", "stages_per_token",
                        "chain_floor_us", "chain_floor_tok_s", "gpu_vs_chain_floor", "profile"})
    EXPECT_TRUE(c.contains(k)) << k;
  // Without the one-dispatch residual MLP every dispatch is one dependent stage; the chain floor is
  // each stage's measured cost plus the bytes at the read ceiling.
  EXPECT_EQ(c["stages_per_token"].get<size_t>(), c["dispatches_per_token"].get<size_t>());
  EXPECT_NEAR(c["chain_floor_us"].get<double>(),
              c["stages_per_token"].get<double>() * j["ceilings"]["stage_gpu_us"].get<double>() + c["bandwidth_floor_us"].get<double>(),
              1e-9 * c["chain_floor_us"].get<double>());
  EXPECT_GT(c["decode_tok_s"].get<double>(), 0);
  EXPECT_GT(c["step_gpu_us"].get<double>(), 0);
  EXPECT_GT(c["floor_us"].get<double>(), 0);
  double dispatches = 0;
  uint64_t profiled_bytes = 0;
  for (const auto& k : c["profile"]) {
    dispatches += k["dispatches"].get<double>();
    profiled_bytes += k["bytes"].get<uint64_t>();
    if (k["kernel"].get<std::string>().rfind("attention_decode", 0) == 0) {
      EXPECT_GT(k["bytes"].get<uint64_t>(), 0u);
    }
  }
  // Every matrix is attributed to its kernel (the norms' weights are not counted).
  EXPECT_GE(profiled_bytes, model.decode_weight_bytes() - uint64_t(model.shape().hidden) * 4 * (2 * model.shape().layers() + 1));
  EXPECT_EQ(dispatches, c["dispatches_per_token"].get<double>());
  EXPECT_TRUE(j["contexts"][1].contains("skipped"));
}

// With the out projection + MLP as one dispatch, its weights are that kernel's bytes (its floor
// counts them), not the unused matvecs'.
TEST(BenchLlm, ProfileCountsTheResidualMlpWeights) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("residual_bytes"), {{"residualMlpWorkgroups", 1}});
  auto pack = formats::LlmPack::open(dir);
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  ASSERT_TRUE(model.residual_mlp());
  // Two contexts: the second decodes after the first's profile left this kernel out of steps
  // (its stage counters then fell behind the step count until the model's reset cleared them,
  // and the second context's waits gave up: bench llm threw).
  auto j = small_profiled_bench(model, {8, 12});
  EXPECT_FALSE(model.residual_mlp_failed());
  EXPECT_FALSE(j["contexts"][1].contains("skipped"));
  // Its workgroups hand over twice inside the dispatch: three dependent stages a layer.
  const auto& c = j["contexts"][0];
  EXPECT_EQ(c["stages_per_token"].get<size_t>(), c["dispatches_per_token"].get<size_t>() + 2 * model.shape().layers());
  uint64_t profiled = 0, residual = 0;
  for (const auto& k : j["contexts"][0]["profile"]) {
    profiled += k["bytes"].get<uint64_t>();
    if (k["kernel"].get<std::string>().rfind("residual_mlp_q4", 0) == 0) residual += k["bytes"].get<uint64_t>();
  }
  const auto& s = model.shape();
  const uint64_t H = s.hidden, F = s.ffn;
  EXPECT_GE(residual, uint64_t(s.layers()) * (3 * F * H / 2)) << "gate_up and down quant bytes at least";
  EXPECT_GE(profiled, model.decode_weight_bytes() - H * 4 * (2 * s.layers() + 1));
  EXPECT_LE(profiled, model.decode_weight_bytes() + 2 * 8 * uint64_t(s.kv_rows()) * 4 * s.layers()) << "nothing counted twice";
  fs::remove_all(dir);
}

// Each kernel of the profile also says what it adds to the step's chain (the step in one pass
// less the step without it), against its chain floor.
TEST(BenchLlm, ProfileTimesEachKernelInTheChain) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  auto j = small_profiled_bench(model, {8});
  const auto& c = j["contexts"][0];
  const double stage_us = j["ceilings"]["stage_gpu_us"].get<double>(), gbps = j["ceilings"]["read_gbps"].get<double>();
  EXPECT_GT(c["profile_step_us"].get<double>(), 0.0);
  for (const auto& k : c["profile"]) {
    EXPECT_LT(k["chain_us"].get<double>(), c["profile_step_us"].get<double>()) << k["kernel"] << ": the step without it took no time";
    EXPECT_NEAR(k["chain_floor_us"].get<double>(), k["dispatches"].get<double>() * stage_us + k["bytes"].get<double>() / (gbps * 1e3),
                1e-9 * k["chain_floor_us"].get<double>());
  }
}

// The prefill matmul search on a small shape: every geometry it keeps reproduces the default
// geometry's output; the k-major variant is searched on k-major weights.
TEST(Tune, PrefillMatmulSearchKeepsOnlyMatchingGeometries) {
  auto& dev = test::test_device();
  tune::KernelTimer timer(dev, test::test_kernels(), 0, 1);
  for (bool kmajor : {false, true}) {
    tune::MatrixShape s{.key = kmajor ? "mlp_down" : "mlp_gate_up", .prefix = "", .rows = 64, .cols = 96,
                        .mode = kmajor ? kernels::OutputMode::accumulate : kernels::OutputMode::overwrite, .count = 1};
    std::vector<float> w32(size_t(s.rows) * s.cols);
    for (size_t i = 0; i < w32.size(); i++) w32[i] = std::sin(0.37f * float(i));
    auto host = kmajor ? reference::quantize_q4_kmajor(w32, s.rows, s.cols) : reference::quantize_q4_symmetric(w32, s.rows, s.cols);
    auto w = test::upload_q4(host);
    std::vector<kernels::MatmulGeometry> space{{4, 8, 8}, {8, 4, 32}, {16, 16, 16}, {8, 8, 16}, {4, 16, 16}};
    auto r = tune::search_matmul(test::test_kernels(), timer, s, w.matrix, kmajor, 37, space, tune::Clock::now() + std::chrono::seconds(600));
    // The default (16x16k16) once, the four others, then split-K 2 and 4 on all five (the split
    // ranking is not the unsplit one): every one matches the reference (none rejected), each
    // timing is reported, fastest first.
    EXPECT_EQ(r.tried, 15) << kmajor;
    ASSERT_EQ(r.timed.size(), 15u) << kmajor;
    EXPECT_TRUE(std::is_sorted(r.timed.begin(), r.timed.end(), [](const auto& a, const auto& b) { return a.first < b.first; }));
    EXPECT_EQ(r.timed.front().second, r.best);
    EXPECT_EQ(r.to_json()["timed"].size(), 15u);
    EXPECT_EQ(r.rejected, 0) << kmajor;
    EXPECT_EQ(r.invalid, 0) << kmajor;
    EXPECT_GT(r.reference_us, 0);
    EXPECT_LE(r.best_us, r.reference_us);
    kernels::MatmulGeometry unsplit = r.best;
    unsplit.k_splits = 1;
    EXPECT_TRUE(std::find(space.begin(), space.end(), unsplit) != space.end());
    EXPECT_TRUE(r.best.k_splits == 1 || r.best.k_splits == 2 || r.best.k_splits == 4) << r.best.k_splits;
  }
  auto all = tune::matmul_space(dev, {});
  EXPECT_FALSE(all.empty());
  for (const auto& g : all) EXPECT_TRUE(kernels::matmul_geometry_fits(g, dev.limits())) << kernels::matmul_geometry_name(g);
}

TEST(Tune, PrefillGeometryTheAdapterCannotRunFallsBackWithAWarning) {
  fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"), scratch("prefill_geometry"),
                                      {{"prefillMatmul", {{"mlp_down", {{"wgTokens", 64}, {"wgRows", 64}, {"kStep", 16}}},
                                                          {"attn_qkv", {{"wgTokens", 4}, {"wgRows", 8}, {"kStep", 32}}}}}});
  auto pack = formats::LlmPack::open(dir);
  auto k = llm::choose_kernels(pack, test::test_device());
  ASSERT_FALSE(k.warnings.empty());
  EXPECT_NE(k.warnings.back().find("prefillMatmul"), std::string::npos) << k.warnings.back();
  // A CPU adapter's fallback for a shape the candidate does not give (usably) is the CPU geometry.
  if (test::test_device().adapter().type == "CPU") {
    EXPECT_EQ(k.matmul_for("mlp_down", 4096, 1024), llm::cpu_matmul_geometry());
    EXPECT_EQ(k.matmul_for("mlp_down", 1024, 1024), llm::cpu_matmul_geometry());
  } else {
    EXPECT_EQ(k.matmul_for("mlp_down", 4096, 1024), kernels::MatmulGeometry{});
    EXPECT_EQ(k.matmul_for("mlp_down", 1024, 1024), (kernels::MatmulGeometry{.micro = 4}));  // 64 workgroups at micro 8
  }
  EXPECT_EQ(k.matmul_for("attn_qkv", 1024, 1024), (kernels::MatmulGeometry{4, 8, 32}));
  fs::remove_all(dir);
}

// The pack's current choice first; then, on a GPU, every shared_x configuration (the variant that
// wins on measured GPUs) before any other, and all four variants present: a budget-cut search covers
// shared_x whole. On a CPU adapter the CPU default comes right after the current choice instead.
TEST(Tune, MatvecSpaceTriesSharedXFirst) {
  const tune::MatvecConfigChoice current{kernels::Q4Variant::carried, tune::reference_geometry(test::test_device())};
  const auto space = tune::matvec_space(test::test_device(), {current});
  ASSERT_GT(space.size(), 4u);
  EXPECT_EQ(space.front().variant, kernels::Q4Variant::carried);
  if (test::test_device().adapter().type == "CPU") {
    const tune::MatvecConfigChoice cpu_default{kernels::Q4Variant::v3_both, llm::cpu_matvec_geometry(test::test_device())};
    EXPECT_EQ(space[1].describe(), cpu_default.describe());
    return;
  }
  auto first_other = std::find_if(space.begin() + 1, space.end(), [](const auto& c) { return c.variant != kernels::Q4Variant::shared_x; });
  EXPECT_GT(first_other - space.begin(), 1) << "no shared_x configuration right after the current one";
  EXPECT_TRUE(std::none_of(first_other, space.end(), [](const auto& c) { return c.variant == kernels::Q4Variant::shared_x; }));
  for (auto v : {kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::carried})
    EXPECT_TRUE(std::any_of(space.begin() + 1, space.end(), [&](const auto& c) { return c.variant == v; }));
}

// The flash search on head size 64 (the quad kernel): the one-block width is timed at every power
// of two from the adapter's widest down to the tile workgroup, all of them reproduce the widest's
// output (none rejected), and the block search then runs at each position.
TEST(Tune, FlashSearchTimesEveryOneBlockWidth) {
  auto& dev = test::test_device();
  if (!dev.has_subgroups()) GTEST_SKIP() << "the width search is the quad kernel's (subgroups)";
  tune::KernelTimer timer(dev, test::test_kernels(), 0, 1);
  formats::LlmShape shape;
  shape.layer_types = {formats::LayerType::Attention};
  shape.hidden = 256;
  shape.heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 64;
  auto r = tune::search_flash(test::test_kernels(), timer, shape, {40, 300}, {}, tune::Clock::now() + std::chrono::seconds(600));
  ASSERT_GE(r.direct.tried.size(), 2u);
  EXPECT_EQ(r.direct.tried.back().first, 64u);
  for (size_t i = 0; i < r.direct.tried.size(); i++) {
    EXPECT_GT(r.direct.tried[i].second, 0) << "width " << r.direct.tried[i].first << " rejected";
    if (i > 0) {
      EXPECT_EQ(r.direct.tried[i].first * 2, r.direct.tried[i - 1].first);
    }
  }
  EXPECT_TRUE(std::any_of(r.direct.tried.begin(), r.direct.tried.end(), [&](const auto& t) { return t.first == r.direct.workgroup; }));
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) {
    EXPECT_GT(p.one_block_us, 0);
    EXPECT_LE(p.best_us, p.one_block_us);
  }
  EXPECT_EQ(r.direct.to_json()["tried"].size(), r.direct.tried.size());
}

// The one-dispatch residual MLP search on random matrices: the three tuned-geometry matvecs are
// timed, every grid is run against their output and timed (none rejected; on a GPU the largest
// grid tried may not run all at once, which ends the search), and the winner is one of the timed
// grids or the separate path.
TEST(Tune, ResidualMlpSearchChecksEveryGrid) {
  auto& dev = test::test_device();
  tune::KernelTimer timer(dev, test::test_kernels(), 0, 1);
  formats::LlmShape shape;
  shape.layer_types = {formats::LayerType::Conv};
  shape.hidden = 128;
  shape.ffn = 192;
  const auto proj = reference::quantize_q4_symmetric(test::random_floats(128 * 128, 1, 0.5f), 128, 128);
  const auto gu = reference::quantize_q4_symmetric(test::random_floats(2 * 192 * 128, 2), 2 * 192, 128);
  const auto down = reference::quantize_q4_symmetric(test::random_floats(128 * 192, 3, 0.5f), 128, 192);
  auto w = test::upload_q4_together({&proj, &gu, &down});  // the one dispatch binds them as one range
  tune::MatvecConfigChoice mv{.variant = kernels::Q4Variant::v3_both, .geometry = {.workgroup_size = 64, .subgroup_size = 8}};
  auto r = tune::search_residual_mlp(test::test_kernels(), timer, shape, {w.matrices[0], w.matrices[1], w.matrices[2], mv, mv, mv},
                                     tune::Clock::now() + std::chrono::seconds(600));
  EXPECT_GT(r.separate_us, 0);
  ASSERT_FALSE(r.tried.empty());
  EXPECT_FALSE(r.budget_hit);
  for (size_t i = 0; i < r.tried.size(); i++) {
    const auto& t = r.tried[i];
    if (i + 1 == r.tried.size() && t.result.rfind("a wait gave up", 0) == 0) continue;
    EXPECT_EQ(t.result, "") << t.workgroups << " workgroups";
    EXPECT_GT(t.us, 0);
  }
  if (r.workgroups) {
    EXPECT_TRUE(std::any_of(r.tried.begin(), r.tried.end(), [&](const auto& t) { return t.workgroups == r.workgroups && t.us == r.best_us; }));
  } else {
    EXPECT_EQ(r.best_us, r.separate_us);
  }
}

// The fused-MLP search on lavapipe (shader-f16): the whole grid, then the best geometry with f16
// down products, which stays within f16's tolerance of the f32 output and wins only by time.
TEST(Tune, MlpSearchTriesF16DownProductsAtTheBestGeometry) {
  auto& dev = test::test_device();
  if (!dev.has_f16()) GTEST_SKIP() << "this adapter has no shader-f16 (lavapipe, i.e. CI, has it)";
  tune::KernelTimer timer(dev, test::test_kernels(), 0, 1);
  formats::LlmShape shape;
  shape.layer_types = {formats::LayerType::Conv};
  shape.hidden = 64;
  shape.ffn = 96;
  auto gu = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(2 * 96 * 64, 4), 2 * 96, 64), "gate_up");
  auto kq = test::upload_q4(reference::quantize_q4_kmajor(test::random_floats(64 * 96, 5, 0.5f), 64, 96), "kquant");
  auto r = tune::search_mlp(test::test_kernels(), timer, shape, gu.matrix, kq.matrix, {}, tune::Clock::now() + std::chrono::seconds(600));
  EXPECT_FALSE(r.budget_hit);
  EXPECT_EQ(r.rejected, 0);
  EXPECT_GT(r.half_product_us, 0) << "measured and within kHalfRejectRelL2";
  EXPECT_EQ(r.best.half_product, r.best_us == r.half_product_us);
  EXPECT_TRUE(r.to_json().contains("half_product_us"));
}

// On a CPU adapter the matvec search is a small grid of SIMD-wide workgroups that starts at the CPU
// default (the pack's own choices still first), where the GPU grid has hundreds of choices.
TEST(Tune, CpuAdapterSearchesSimdWideWorkgroupsFromTheCpuDefault) {
  const auto& dev = test::test_device();
  if (dev.adapter().type != "CPU") GTEST_SKIP() << "a CPU adapter's search space";
  const auto space = tune::matvec_space(dev, {});
  ASSERT_FALSE(space.empty());
  EXPECT_LE(space.size(), 64u);
  const auto cpu = llm::cpu_matvec_geometry(dev);
  EXPECT_EQ(space.front().variant, kernels::Q4Variant::v3_both);
  EXPECT_EQ(space.front().geometry.workgroup_size, cpu.workgroup_size);
  EXPECT_EQ(space.front().geometry.rows_per_subgroup, cpu.rows_per_subgroup);
  for (const auto& c : space) {
    EXPECT_LE(c.geometry.workgroup_size, 4 * cpu.workgroup_size) << c.describe();
    EXPECT_NE(c.variant, kernels::Q4Variant::shared_x) << c.describe();
  }
  const tune::MatvecConfigChoice mine{kernels::Q4Variant::carried, {256, 32, 1, 1}};
  const auto with_input = tune::matvec_space(dev, {mine});
  EXPECT_EQ(with_input.front().describe(), mine.describe());
  EXPECT_EQ(with_input.size(), space.size() + 1);
}
