// The ss-flow model on the int8 path (block linears on packed int8 dot products) against the f32
// path: forwards, and the whole default sampler's final latent within the 1e-2 budget; the stage
// candidate file (options <-> JSON, per device, bad files); the tuner on a tiny stage.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "gpu_fixture.h"
#include "reference/ss_flow_reference.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/ss_flow_tune.h"

namespace fs = std::filesystem;
using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

bool has_dot4() { return test_device().adapter().dot4_i8_packed; }

// 512 tokens (8^3), 128 channels, 2 heads, 2 blocks, context 96 channels: small enough for the
// CPU adapter to run the whole 25-step sampler twice.
formats::SsFlowConfig small_config() {
  formats::SsFlowConfig c = formats::ss_flow_tiny_config();
  c.resolution = 8;
  return c;
}

struct Stage {
  formats::SsFlowConfig config;
  trellis::MemoryTensors tensors;
  std::vector<float> cond, neg;
  static constexpr int64_t kCtx = 7;
  explicit Stage(formats::SsFlowConfig c)
      : config(c), tensors(trellis::synth_ss_flow_stage(c, 5)),
        cond(test::random_floats(size_t(kCtx * c.cond_channels), 51)), neg(test::random_floats(size_t(kCtx * c.cond_channels), 52)) {}
};

trellis::SsFlowOptions int8_options() {
  trellis::SsFlowOptions o;
  o.int8 = true;
  return o;
}

std::vector<float> sample(const Stage& s, const trellis::SsFlowOptions& o, bool* int8_used = nullptr) {
  trellis::SsFlowModel model(test_kernels(), s.tensors, o);
  if (int8_used) *int8_used = model.options().int8;
  model.set_context(s.cond, s.neg, Stage::kCtx);
  trellis::FlowSampler sampler(model);
  return sampler.sample(trellis::gaussian_noise(9, size_t(s.config.in_channels * s.config.tokens())), trellis::SamplerOptions{});
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

// The default sampler (25 steps, cfg 7.5 in [0.5, 1], rescale 3): the int8 path's final latent
// against the f32 path's, at the tiny (64 tokens) and the small (512 tokens) shape.
TEST(SsFlowInt8, SamplerFinalLatentWithinBudgetOfTheF32Path) {
  if (!has_dot4()) GTEST_SKIP() << "no packed_4x8_integer_dot_product";
  for (auto config : {formats::ss_flow_tiny_config(), small_config()}) {
    Stage s(config);
    bool int8 = false;
    const auto f32 = sample(s, {});
    const auto i8 = sample(s, int8_options(), &int8);
    ASSERT_TRUE(int8);
    const double d = test::rel_l2(i8, f32);
    RecordProperty("latent_rel_l2_" + std::to_string(config.tokens()) + "_tokens", std::to_string(d));
    std::printf("int8 vs f32 final latent, %lld tokens x %lld channels, %lld blocks: rel L2 %.3e\n", (long long)config.tokens(),
                (long long)config.model_channels, (long long)config.num_blocks, d);
    EXPECT_LT(d, 1e-2) << config.tokens() << " tokens";
    EXPECT_GT(d, 0.0) << "the int8 path ran the f32 kernels";
  }
}

// Forwards at batch 1 and 2 against the CPU reference (f32 on the dequantized weights): int8
// activations cost a little accuracy, a layout or scale bug far more. Split-K and per-matmul int8
// overrides (one matmul on f32 among int8 ones, int8 on an f32 model) too.
TEST(SsFlowInt8, ForwardsStayNearTheReference) {
  if (!has_dot4()) GTEST_SKIP() << "no packed_4x8_integer_dot_product";
  Stage s(formats::ss_flow_tiny_config());
  reference::Weights w;
  for (const auto& [name, t] : s.tensors.tensors) w[name] = trellis::dequantize(s.tensors.get(name));
  const int64_t n = s.config.in_channels * s.config.tokens();
  auto x = test::random_floats(size_t(2 * n), 61);
  std::vector<float> x1(x.begin(), x.begin() + n), both = s.cond;
  both.insert(both.end(), s.neg.begin(), s.neg.end());
  const auto ref1 = reference::ss_flow_forward(s.config, w, x1, {0.7}, s.cond, Stage::kCtx);
  const auto ref2 = reference::ss_flow_forward(s.config, w, x, {0.3, 0.9}, both, Stage::kCtx);
  std::vector<trellis::SsFlowOptions> variants(4, int8_options());
  variants[1].mlp2_k_splits = 3;
  variants[1].square_k_splits = 2;
  variants[1].matmul = {.wg_tokens = 4, .wg_rows = 4};
  variants[2].matmul_overrides["mlp.0"] = {.wg_tokens = 4, .wg_rows = 2, .rows_per_thread = 16};  // f32 among int8
  variants[3] = {};
  variants[3].matmul_overrides["mlp.2+gate@2"] = {.wg_tokens = 2, .wg_rows = 4, .k_splits = 2, .int8 = true};
  for (size_t i = 0; i < variants.size(); i++) {
    trellis::SsFlowModel model(test_kernels(), s.tensors, variants[i]);
    model.set_context(s.cond, s.neg, Stage::kCtx);
    const double d1 = test::rel_l2(model.forward(x1, {0.7}), ref1), d2 = test::rel_l2(model.forward(x, {0.3, 0.9}), ref2);
    EXPECT_LT(d1, 2e-2) << "variant " << i;
    EXPECT_LT(d2, 2e-2) << "variant " << i;
    if (i != 3) {
      EXPECT_GT(d1, 1e-5) << "variant " << i << ": batch 1 did not run int8";
    }
    EXPECT_GT(d2, 1e-5) << "variant " << i << ": batch 2 did not run int8";
  }
}

TEST(SsFlowCandidate, OptionsRoundTripThroughJson) {
  trellis::SsFlowOptions o;
  o.int8 = true;
  o.matmul = {.wg_tokens = 8, .wg_rows = 4, .k_step = 32, .vec4 = false, .k_splits = 1, .prefetch = false, .rows_per_thread = 16};
  o.narrow_matmul.reset();
  o.mlp2_k_splits = 3;
  o.attention = kernels::FlashVariant::Tiled;
  o.attention_tiled = {128, 4, 8, true};
  o.cross_attention_keys = 16;
  o.matmul_overrides["mlp.0@2"] = {.wg_tokens = 4, .wg_rows = 2, .k_splits = 2, .int8 = true};
  EXPECT_EQ(trellis::options_from_json(trellis::options_to_json(o), "test"), o);
  EXPECT_EQ(trellis::options_from_json(nlohmann::json::object(), "test"), trellis::SsFlowOptions{});  // absent = default
  auto bad = [](nlohmann::json j, const std::string& needle) {
    try {
      trellis::options_from_json(j, "cand.json");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad({{"int9", true}}, "unknown key 'int9'");
  bad({{"int8", 1}}, "cand.json.int8");
  bad({{"attention", "hex"}}, "cand.json.attention");
  bad({{"mlp2_k_splits", 0}}, "cand.json.mlp2_k_splits");
  bad({{"matmul", {{"wg_rows", 3}}}}, "cand.json.matmul");
  bad({{"matmul_overrides", {{"mlp.0", {{"k_step", 7}}}}}}, "mlp.0");
}

TEST(SsFlowCandidate, FileKeepsOtherDevicesAndRejectsForeignFiles) {
  const fs::path dir = temp_dir("ss_flow_candidate");
  const fs::path file = dir / trellis::kSsFlowCandidateFile;
  gpu::AdapterDescription other = test_device().adapter();
  other.device_id ^= 0x1234;
  trellis::SsFlowOptions mine, theirs;
  mine.mlp2_k_splits = 4;
  theirs.attention_queries = 64;
  EXPECT_FALSE(trellis::load_ss_flow_candidate(dir, test_device().adapter()));
  EXPECT_EQ(trellis::stage_options(dir, test_device().adapter()), trellis::SsFlowOptions{});  // no file: defaults
  trellis::save_ss_flow_candidate(file, other, {theirs, {{"checked", 3}}});
  EXPECT_FALSE(trellis::load_ss_flow_candidate(dir, test_device().adapter()));  // another GPU's entry only
  trellis::save_ss_flow_candidate(file, test_device().adapter(), {mine, {}});
  EXPECT_EQ(trellis::load_ss_flow_candidate(dir, test_device().adapter())->options, mine);
  EXPECT_EQ(trellis::load_ss_flow_candidate(dir, other)->options, theirs);
  EXPECT_EQ(trellis::load_ss_flow_candidate(dir, other)->tuned["checked"], 3);
  std::string used;
  EXPECT_EQ(trellis::stage_options(dir, test_device().adapter(), &used), mine);
  EXPECT_NE(used.find(trellis::kSsFlowCandidateFile), std::string::npos);
  // Broken or foreign files: an error naming the file, and never overwritten.
  for (const std::string text : {"{\"format\": \"something-else\"}", "{not json", "{\"format\": \"ember-ss-flow-candidates\", \"version\": 2, \"devices\": {}}"}) {
    write_file_atomic(file, text);
    EXPECT_THROW(trellis::load_ss_flow_candidate(dir, test_device().adapter()), Error) << text;
    EXPECT_THROW(trellis::save_ss_flow_candidate(file, test_device().adapter(), {mine, {}}), Error) << text;
    EXPECT_EQ(read_file(file), text);
  }
  fs::remove_all(dir);
}

// A short-budget tune of a tiny stage: choices are checked against the reference forward before
// they are timed, the best is written, and the written candidate's forward reproduces the
// reference path's within its path's tolerance.
TEST(SsFlowTune, ShortBudgetTuneWritesACandidateThatReproducesTheReference) {
  Stage s(formats::ss_flow_tiny_config());
  trellis::SsFlowModel model(test_kernels(), s.tensors);
  trellis::SsFlowTuneOptions t;
  t.budget_s = 600;   // the choice count ends it, however fast this machine is
  t.max_choices = 3;  // the defaults and the first changes (int8 on, where the adapter has it)
  t.repeats = 1;
  t.ctx_tokens = Stage::kCtx;
  int lines = 0;
  t.progress = [&](const std::string&) { lines++; };
  const auto r = trellis::tune_ss_flow(model, t);
  EXPECT_EQ(r.checked + r.rejected + r.failed, 3) << r.table();
  EXPECT_GE(r.checked, 2) << r.table();  // the defaults and at least one change
  EXPECT_EQ(size_t(r.checked + r.rejected + r.failed), r.rows.size()) << r.table();
  EXPECT_GT(lines, 0);
  EXPECT_LE(r.best_ms, r.default_ms);
  EXPECT_EQ(model.options(), r.best);
  if (r.best.int8) {
    EXPECT_GE(r.latent_rel_l2, 0.0);
    EXPECT_LE(r.latent_rel_l2, t.latent_budget);
  }
  const fs::path dir = temp_dir("ss_flow_tune");
  trellis::save_ss_flow_candidate(dir / trellis::kSsFlowCandidateFile, test_device().adapter(), {r.best, r.to_json()});
  const auto back = trellis::stage_options(dir, test_device().adapter());
  EXPECT_EQ(back, r.best);
  // The candidate's forward against a fresh model on the reference path.
  const int64_t n = s.config.in_channels * s.config.tokens();
  const auto x = test::random_floats(size_t(2 * n), 71);
  trellis::SsFlowModel tuned(test_kernels(), s.tensors, back), reference(test_kernels(), s.tensors, {});
  for (auto* m : {&tuned, &reference}) m->set_context(s.cond, s.neg, Stage::kCtx);
  EXPECT_LT(test::rel_l2(tuned.forward(x, {0.5, 0.25}), reference.forward(x, {0.5, 0.25})), back.int8 ? t.int8_tolerance : t.f32_tolerance);
  fs::remove_all(dir);
}
