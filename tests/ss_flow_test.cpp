// The ss-flow model and sampler on the GPU against the CPU reference (tests/reference), on a tiny
// configuration with random weights; determinism; bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>

#include "common/error.h"
#include "gpu_fixture.h"
#include "reference/ss_flow_reference.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_stage.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

// 64 tokens, 128 channels, 2 heads, 2 blocks, cond 96 (not a multiple of the 64-column group).
formats::SsFlowConfig tiny() { return formats::ss_flow_tiny_config(); }
constexpr int64_t kCtx = 7;

reference::Weights dequantized(const trellis::MemoryTensors& m) {
  reference::Weights w;
  for (const auto& [name, t] : m.tensors) w[name] = trellis::dequantize(m.get(name));
  return w;
}

struct Tiny {
  formats::SsFlowConfig config = tiny();
  trellis::MemoryTensors tensors = trellis::synth_ss_flow_stage(config, 7);
  reference::Weights weights = dequantized(tensors);
  std::vector<float> cond = test::random_floats(size_t(kCtx * config.cond_channels), 11);
  std::vector<float> neg = test::random_floats(size_t(kCtx * config.cond_channels), 12);
};

Tiny& tiny_model() {
  static Tiny t;
  return t;
}

trellis::SsFlowOptions small_tiles() {
  trellis::SsFlowOptions o;
  o.matmul = {4, 4, 16};  // 32 x 32 tiles: several tiles per matrix even at the tiny size
  o.attention_queries = 32;
  return o;
}

// rel L2 of a batch-2 forward (cond | neg, timesteps t0 and t1) on random x from `seed`.
double batch2_rel_l2(trellis::SsFlowModel& model, uint32_t seed, double t0, double t1) {
  auto& m = tiny_model();
  auto x = test::random_floats(size_t(2 * m.config.in_channels * m.config.tokens()), seed);
  std::vector<float> both = m.cond;
  both.insert(both.end(), m.neg.begin(), m.neg.end());
  return test::rel_l2(model.forward(x, {t0, t1}), reference::ss_flow_forward(m.config, m.weights, x, {t0, t1}, both, kCtx));
}

}  // namespace

TEST(SsFlowModel, ConfigIsReadFromTensorShapes) {
  auto c = trellis::ss_flow_config_of(tiny_model().tensors);
  EXPECT_EQ(c.tokens(), 64);
  EXPECT_EQ(c.model_channels, 128);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_blocks, 2);
  EXPECT_EQ(c.cond_channels, 96);
  EXPECT_EQ(c.mlp_channels(), 512);
}

TEST(SsFlowModel, ForwardMatchesReferenceAtBatch1And2) {
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors, small_tiles());
  model.set_context(m.cond, m.neg, kCtx);
  const int64_t n = m.config.in_channels * m.config.tokens();
  auto x = test::random_floats(size_t(2 * n), 21);
  // Batch 1: conditional row only.
  std::vector<float> x1(x.begin(), x.begin() + n);
  auto ref1 = reference::ss_flow_forward(m.config, m.weights, x1, {0.83}, m.cond, kCtx);
  auto got1 = model.forward(x1, {0.83});
  EXPECT_LT(test::rel_l2(got1, ref1), 1e-3);
  EXPECT_LT(test::rel_l2(got1, ref1), 1e-5) << "expected f32-level agreement on random weights";
  // Batch 2: cond | neg with different timesteps per row.
  std::vector<float> both = m.cond;
  both.insert(both.end(), m.neg.begin(), m.neg.end());
  auto ref2 = reference::ss_flow_forward(m.config, m.weights, x, {0.31, 0.97}, both, kCtx);
  auto got2 = model.forward(x, {0.31, 0.97});
  EXPECT_LT(test::rel_l2(got2, ref2), 1e-3);
}

TEST(SsFlowModel, DefaultGeometryMatchesReference) {
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors);
  model.set_context(m.cond, m.neg, kCtx);
  auto x = test::random_floats(size_t(m.config.in_channels * m.config.tokens()), 22);
  auto ref = reference::ss_flow_forward(m.config, m.weights, x, {0.5}, m.cond, kCtx);
  EXPECT_LT(test::rel_l2(model.forward(x, {0.5}), ref), 1e-3);
}

// Split-K for mlp.2 (3 uneven chunks of its 8 column groups) and the C x C matmuls (2 chunks),
// each epilogue (gated residual, residual, none) applied by the sum pass.
TEST(SsFlowModel, SplitKForwardMatchesReference) {
  auto& m = tiny_model();
  trellis::SsFlowOptions o = small_tiles();
  o.mlp2_k_splits = 3;
  o.square_k_splits = 2;
  trellis::SsFlowModel model(test_kernels(), m.tensors, o);
  model.set_context(m.cond, m.neg, kCtx);
  EXPECT_LT(batch2_rel_l2(model, 24, 0.27, 0.64), 1e-5);
}

// The batch-1 self attention split over 2 key ranges and merged; the oct kernel's lazy rescale and
// per-key PV (and 16-key tiles: 4 of the 64 tokens' keys, 2 per split).
TEST(SsFlowModel, KeySplitAttentionForwardMatchesReference) {
  auto& m = tiny_model();
  trellis::SsFlowOptions o = small_tiles();
  o.attention_keys = 16;
  o.attention_key_splits = 2;
  o.attention_lazy_rescale = o.attention_fused_pv = true;
  trellis::SsFlowModel model(test_kernels(), m.tensors, o);
  if (model.options().attention != kernels::FlashVariant::Oct) GTEST_SKIP() << "no subgroups of a multiple of 8 lanes";
  model.set_context(m.cond, m.neg, kCtx);
  auto x1 = test::random_floats(size_t(m.config.in_channels * m.config.tokens()), 25);
  EXPECT_LT(test::rel_l2(model.forward(x1, {0.61}), reference::ss_flow_forward(m.config, m.weights, x1, {0.61}, m.cond, kCtx)), 1e-5);
  EXPECT_LT(batch2_rel_l2(model, 26, 0.35, 0.8), 1e-5);
}

// Per-matmul overrides: mlp.0 split-K at batch 2 only, to_qkv at 16 rows a thread at both batches.
TEST(SsFlowModel, MatmulOverridesForwardMatchesReference) {
  auto& m = tiny_model();
  trellis::SsFlowOptions o = small_tiles();
  o.matmul_overrides["mlp.0@2"] = {.wg_tokens = 4, .wg_rows = 4, .k_step = 16, .k_splits = 2};
  o.matmul_overrides["self_attn.to_qkv"] = {.wg_tokens = 4, .wg_rows = 2, .k_step = 16, .rows_per_thread = 16};
  trellis::SsFlowModel model(test_kernels(), m.tensors, o);
  model.set_context(m.cond, m.neg, kCtx);
  EXPECT_LT(batch2_rel_l2(model, 27, 0.44, 0.71), 1e-5);
  auto x1 = test::random_floats(size_t(m.config.in_channels * m.config.tokens()), 27);
  EXPECT_LT(test::rel_l2(model.forward(x1, {0.44}), reference::ss_flow_forward(m.config, m.weights, x1, {0.44}, m.cond, kCtx)), 1e-5);
  o.matmul_overrides = {{"mlp.9", {}}};  // no such matmul: an error naming the real ones
  trellis::SsFlowModel typo(test_kernels(), m.tensors, o);
  EXPECT_THROW(typo.set_context(m.cond, m.neg, kCtx), Error);
}

TEST(SsFlowModel, TiledAttentionForwardMatchesReference) {
  auto& m = tiny_model();
  trellis::SsFlowOptions o;
  o.attention = kernels::FlashVariant::Tiled;  // the default geometry, fitted to this device
  trellis::SsFlowModel model(test_kernels(), m.tensors, o);
  if (model.options().attention != kernels::FlashVariant::Tiled) GTEST_SKIP() << "no subgroups of a multiple of 8 lanes";
  model.set_context(m.cond, m.neg, kCtx);
  EXPECT_LT(batch2_rel_l2(model, 23, 0.42, 0.9), 1e-5);
  auto x1 = test::random_floats(size_t(m.config.in_channels * m.config.tokens()), 23);
  EXPECT_LT(test::rel_l2(model.forward(x1, {0.42}), reference::ss_flow_forward(m.config, m.weights, x1, {0.42}, m.cond, kCtx)), 1e-5);
}

TEST(SsFlowSampler, ScheduleAndIntervalAreTheReleasedOnes) {
  trellis::SamplerOptions o;
  auto ts = trellis::flow_schedule(o.steps, o.rescale_t);
  ASSERT_EQ(ts.size(), 26u);
  EXPECT_EQ(ts.front(), 1.0);
  EXPECT_EQ(ts.back(), 0.0);
  auto rts = reference::flow_schedule(o.steps, o.rescale_t);
  for (size_t i = 0; i < ts.size(); i++) EXPECT_DOUBLE_EQ(ts[i], rts[i]);
  int guided = 0, last_guided = -1;
  for (int i = 0; i < o.steps; i++)
    if (trellis::guided_at(ts[size_t(i)], o)) guided++, last_guided = i;
  EXPECT_EQ(guided, 19);  // docs/models.md: steps 0..18 need the unconditional pass
  EXPECT_EQ(last_guided, 18);
}

TEST(SsFlowSampler, GuidedStepsMatchReferenceSampler) {
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors, small_tiles());
  model.set_context(m.cond, m.neg, kCtx);
  trellis::FlowSampler sampler(model);
  auto noise = trellis::gaussian_noise(3, size_t(m.config.in_channels * m.config.tokens()));
  for (auto [steps, lo] : std::vector<std::pair<int, double>>{{2, 0.0}, {4, 0.7}}) {
    trellis::SamplerOptions o;
    o.steps = steps;
    o.cfg_lo = lo;
    int guided = 0;
    std::vector<int> reported;  // steps are queued one ahead; each is still reported once, in order
    auto got = sampler.sample(noise, o, [&](const trellis::StepReport& r) {
      guided += r.guided;
      reported.push_back(r.step);
      EXPECT_GT(r.seconds, 0.0);
    });
    auto ref = reference::flow_sample(m.config, m.weights, noise, m.cond, m.neg, kCtx, o);
    EXPECT_LT(test::rel_l2(got, ref), 1e-3) << steps << " steps";
    EXPECT_EQ(guided, steps == 2 ? 2 : 3);  // t = 1, .9, .75, .5: three inside [0.7, 1]
    auto in_order = std::vector<int>(size_t(steps));
    std::iota(in_order.begin(), in_order.end(), 0);
    EXPECT_EQ(reported, in_order);
  }
}

TEST(SsFlowSampler, BatchWithOneCondAndPerSampleNegativesMatchesReference) {
  // B = 2: one cond repeated over the batch, a negative context per latent (upstream's repeat);
  // the velocities come back [steps][B][...].
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors, small_tiles());
  trellis::FlowSampler sampler(model);
  const size_t n = size_t(m.config.in_channels * m.config.tokens());
  auto noise = trellis::gaussian_noise(21, 2 * n);
  std::vector<float> negs = m.neg, other = test::random_floats(m.neg.size(), 13);
  negs.insert(negs.end(), other.begin(), other.end());
  trellis::SamplerOptions o;
  o.steps = 2;
  std::vector<float> v, ref_v;
  auto got = sampler.sample_batch(noise, m.cond, negs, kCtx, o, {}, nullptr, &v);
  auto ref = reference::flow_sample(m.config, m.weights, noise, m.cond, negs, kCtx, o, &ref_v);
  ASSERT_EQ(got.size(), 2 * n);
  ASSERT_EQ(v.size(), ref_v.size());
  EXPECT_LT(test::rel_l2(got, ref), 1e-3);
  EXPECT_LT(test::rel_l2(v, ref_v), 1e-3);
  // Contexts of a batch that fits neither 1 nor B latents are refused before any step runs.
  std::vector<float> three(3 * m.cond.size());
  EXPECT_THROW(sampler.sample_batch(noise, three, m.neg, kCtx, o), Error);
  EXPECT_THROW(sampler.sample_batch(std::vector<float>(n + 1), m.cond, m.neg, kCtx, o), Error);
}

TEST(SsFlowSampler, SameSeedSameLatent) {
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors);
  model.set_context(m.cond, m.neg, kCtx);
  trellis::FlowSampler sampler(model);
  const size_t n = size_t(m.config.in_channels * m.config.tokens());
  trellis::SamplerOptions o;
  o.steps = 3;
  auto a = sampler.sample(trellis::gaussian_noise(42, n), o);
  auto b = sampler.sample(trellis::gaussian_noise(42, n), o);
  auto c = sampler.sample(trellis::gaussian_noise(43, n), o);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SsFlowSampler, NoiseIsStandardGaussianAndDeterministic) {
  auto v = trellis::gaussian_noise(0, 100001);
  EXPECT_EQ(v, trellis::gaussian_noise(0, 100001));
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= double(v.size());
  for (float x : v) var += (x - mean) * (x - mean);
  var /= double(v.size());
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
}

TEST(SsFlowBadInput, SamplerOptionsAreChecked) {
  auto bad = [](auto edit, const char* field) {
    trellis::SamplerOptions o;
    edit(o);
    try {
      o.validate();
      ADD_FAILURE() << "accepted bad " << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.where(), field) << e.what();
    }
  };
  bad([](auto& o) { o.steps = 0; }, "--steps");
  bad([](auto& o) { o.cfg_lo = -0.1; }, "--cfg-interval");
  bad([](auto& o) { o.cfg_hi = 1.5; }, "--cfg-interval");
  bad([](auto& o) { o.cfg_lo = 0.9, o.cfg_hi = 0.5; }, "--cfg-interval");
  bad([](auto& o) { o.rescale_t = 0; }, "--rescale-t");
  trellis::SamplerOptions ok;
  EXPECT_NO_THROW(ok.validate());
}

TEST(SsFlowBadInput, ContextOfTheWrongSizeIsRejected) {
  auto& m = tiny_model();
  trellis::SsFlowModel model(test_kernels(), m.tensors);
  std::vector<float> short_ctx(size_t(kCtx * m.config.cond_channels - 1));
  EXPECT_THROW(model.set_context(short_ctx, {}, kCtx), Error);
  EXPECT_THROW(model.set_context(m.cond, {}, 0), Error);
}

TEST(SsFlowBadInput, TensorsOfAnotherModelAreRejected) {
  trellis::MemoryTensors other;
  other.tensors["model.embed_tokens.weight"] = trellis::raw_f16({0, 0, 0, 0}, {2, 2});
  try {
    trellis::SsFlowModel model(test_kernels(), other);
    FAIL() << "accepted another model's tensors";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input_layer.weight"), std::string::npos) << e.what();
  }
  auto broken = tiny_model().tensors;
  broken.tensors["blocks.1.self_attn.to_out.weight"] = trellis::quantize_matrix(std::vector<float>(128 * 64), 128, 64);
  try {
    trellis::ss_flow_config_of(broken);
    FAIL() << "accepted a wrong shape";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.1.self_attn.to_out.weight"), std::string::npos) << e.what();
  }
}
