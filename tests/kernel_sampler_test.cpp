// GPU sampler: greedy is the exact argmax (ties to the lowest id, with the repetition penalty);
// seeded sampling is deterministic and its empirical distribution matches the reference.
#include <gtest/gtest.h>

#include "common/error.h"
#include "kernel_test_util.h"
#include "kernels/sampler.h"
#include "kernels/step.h"
#include "q4_gpu.h"
#include "reference/sampler_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

struct Rig {
  kernels::Sampler sampler;
  gpu::Buffer logits, tokens, params;
  kernels::Sampler::Groups groups;

  Rig(const kernels::SamplerConfig& c, const std::vector<float>& l, const std::vector<uint32_t>& toks)
      : sampler(test_kernels(), c),
        logits(test::buffer_from(l, "logits")),
        tokens(test::buffer_from(toks, "tokens")),
        params(test_device().create_storage(sizeof(kernels::SamplerParams), "sampler params")),
        groups(sampler.bind({&logits}, {&tokens}, {&params})) {}

  uint32_t run(const kernels::SamplerParams& p, bool greedy) {
    kernels::upload_params(test_device(), params, p);
    gpu::Recorder rec(test_device());
    greedy ? sampler.record_greedy(rec, groups) : sampler.record_sample(rec, groups);
    rec.submit();
    return test_device().download_as<uint32_t>(tokens, p.out_slot * 4, 1)[0];
  }
};

}  // namespace

// Both ways: two dispatches, and one (the last workgroup picks).
class SamplerGreedyTest : public ::testing::TestWithParam<bool> {};

TEST_P(SamplerGreedyTest, GreedyIsArgmaxWithTiesToLowestIdAndPenalty) {
  for (uint32_t vocab : {50u, 1000u, 65536u}) {
    auto logits = test::random_floats(vocab, vocab);
    const uint32_t partials = vocab >= 1000 ? 256 : 4;
    std::vector<uint32_t> toks(16, 0);
    Rig rig({.vocab = vocab, .partials = partials, .one_dispatch_greedy = GetParam()}, logits, toks);
    kernels::SamplerParams p{.vocab = vocab, .out_slot = 15};
    EXPECT_EQ(rig.run(p, true), reference::greedy(logits, {}, 1.0f)) << vocab;
    // A tie for the maximum in two different partials: the lower id wins.
    float top = *std::max_element(logits.begin(), logits.end()) + 1.0f;
    logits[vocab - 3] = top;
    logits[vocab / 3] = top;
    test_device().upload(rig.logits, std::span<const float>(logits));
    EXPECT_EQ(rig.run(p, true), vocab / 3) << vocab;
    // The penalty (window = the two tied ids) moves the argmax elsewhere.
    std::vector<uint32_t> window = {vocab / 3, vocab - 3};
    toks[0] = window[0];
    toks[1] = window[1];
    test_device().upload(rig.tokens, std::span<const uint32_t>(toks));
    p.repetition_penalty = 4.0f;
    p.window_len = 2;
    EXPECT_EQ(rig.run(p, true), reference::greedy(logits, window, 4.0f)) << vocab;
    // Sampling at temperature 0 is greedy too (small vocabularies only: lavapipe is slow at sorting).
    if (vocab <= 1000) {
      p.temperature = 0;
      EXPECT_EQ(rig.run(p, false), reference::greedy(logits, window, 4.0f)) << vocab;
    }
    EXPECT_FALSE(rig.sampler.gave_up());
  }
}

// Many uses in a row, odd and even (the one dispatch alternates its tags and counter range
// between uses), some in one submit, on fresh logits each time and with sampling between them
// (which shares no state with the one greedy dispatch). A tag or counter that went wrong leaves
// the last workgroup waiting for words that never come: it gives up, which gave_up reports. (On
// lavapipe no store arrives late, so only a GPU can show a stale word read as fresh.)
TEST_P(SamplerGreedyTest, ConsecutiveUsesEachPickTheirOwnArgmax) {
  const uint32_t vocab = 4096, uses = 7;
  std::vector<uint32_t> toks(32, 0);
  Rig rig({.vocab = vocab, .partials = 64, .one_dispatch_greedy = GetParam()}, test::random_floats(vocab, 90), toks);
  gpu::Buffer staging = test_device().create_storage(8 * 256, "params staging");
  for (uint32_t round = 0; round < 3; round++) {
    std::vector<uint32_t> want;
    for (uint32_t u = 0; u < uses; u++) {
      const auto logits = test::random_floats(vocab, 100 + round * uses + u);
      want.push_back(reference::greedy(logits, {}, 1.0f));
      test_device().upload(rig.logits, std::span<const float>(logits));
      kernels::upload_params(test_device(), rig.params, {.vocab = vocab, .out_slot = u});
      gpu::Recorder rec(test_device());
      rig.sampler.record_greedy(rec, rig.groups);
      if (round == 1) {
        rec.write(staging, 0, kernels::SamplerParams{.vocab = vocab, .out_slot = 20 + u}, rig.params);
        rig.sampler.record_sample(rec, rig.groups);
      }
      rec.submit();
    }
    // One submit of several uses on the last logits, each with its own out slot.
    const uint32_t together = 3 + round;
    gpu::Recorder rec(test_device());
    for (uint32_t u = 0; u < together; u++) {
      rec.write(staging, u * 256, kernels::SamplerParams{.vocab = vocab, .out_slot = 10 + u}, rig.params);
      rig.sampler.record_greedy(rec, rig.groups);
    }
    rec.submit();
    const auto got = test_device().download_as<uint32_t>(rig.tokens, 0, uses);
    EXPECT_EQ(got, want) << "round " << round;
    EXPECT_EQ(test_device().download_as<uint32_t>(rig.tokens, 10 * 4, together), std::vector<uint32_t>(together, want.back()));
  }
  EXPECT_FALSE(rig.sampler.gave_up());
}

// What decides which sampler a device gets (Generator: the largest that its binding limit takes).
TEST(Sampler, StorageBuffersCountTheLargestDispatchsBindings) {
  using kernels::Sampler;
  EXPECT_EQ(Sampler::storage_buffers({.vocab = 100}), 4u);  // the partials stages
  EXPECT_EQ(Sampler::storage_buffers({.vocab = 100, .one_dispatch_greedy = true}), 4u);
  EXPECT_EQ(Sampler::storage_buffers({.vocab = 100, .embed_rows = 100, .embed_cols = 32}), 7u);
  EXPECT_EQ(Sampler::storage_buffers({.vocab = 100, .embed_rows = 100, .embed_cols = 32, .embed_asymmetric = true}), 8u);
  EXPECT_EQ(Sampler::storage_buffers({.vocab = 100, .embed_rows = 100, .embed_cols = 32, .embed_asymmetric = true, .one_dispatch_greedy = true}),
            9u);
}

INSTANTIATE_TEST_SUITE_P(Ways, SamplerGreedyTest, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "one_dispatch" : "two_dispatches"); });

// The embedding pick: besides the id, the id's row of the table (dequantized as the embedding
// lookup does) lands in `out`, and the step parameters advance to one token after the step before,
// for the greedy (in two dispatches and in one) and the sampling pick, with and without zero points.
TEST(Sampler, EmbeddingPickWritesThePickedRowAndAdvancesTheStep) {
  const uint32_t vocab = 1000, cols = 96;
  auto logits = test::random_floats(vocab, 61);
  for (bool asymmetric : {true, false}) {
    const auto floats = test::random_floats(size_t(vocab) * cols, 62);
    const auto table = asymmetric ? reference::quantize_q4_asymmetric(floats, vocab, cols) : reference::quantize_q4_symmetric(floats, vocab, cols);
    const auto rows = reference::dequantize_q4(table);
    auto w = test::upload_q4(table, "embed");
    for (bool one_dispatch : {false, true}) {
      kernels::SamplerConfig c{.vocab = vocab, .partials = 4, .embed_rows = vocab, .embed_cols = cols, .embed_asymmetric = asymmetric,
                               .one_dispatch_greedy = one_dispatch};
      kernels::Sampler sampler(test_kernels(), c);
      gpu::Buffer lb = test::buffer_from(logits, "logits"), tokens = test::buffer_from(std::vector<uint32_t>(16, 0), "tokens");
      gpu::Buffer params = test_device().create_storage(sizeof(kernels::SamplerParams), "params");
      gpu::Buffer out = test_device().create_storage(cols * 4, "out"), step = kernels::create_step_buffer(test_device());
      const kernels::PickEmbedding target{w.matrix, {&out}, {&step}};
      auto groups = sampler.bind({&lb}, {&tokens}, {&params}, &target);
      EXPECT_THROW(sampler.bind({&lb}, {&tokens}, {&params}), Error);  // an embedding sampler needs its target
      for (bool greedy : {true, false}) {
        kernels::upload_step(test_device(), step, {.start = 5, .rows = 3, .seq = 0, .decode_step = 9});
        kernels::upload_params(test_device(), params, {.vocab = vocab, .temperature = 0.7f, .seed = 3, .out_slot = 8});
        gpu::Recorder rec(test_device());
        greedy ? sampler.record_greedy(rec, groups) : sampler.record_sample(rec, groups);
        rec.submit();
        const uint32_t id = test_device().download_as<uint32_t>(tokens, 8 * 4, 1)[0];
        ASSERT_LT(id, vocab);
        if (greedy) {
          EXPECT_EQ(id, reference::greedy(logits, {}, 1.0f));
        }
        const std::vector<float> row(rows.begin() + size_t(id) * cols, rows.begin() + size_t(id + 1) * cols);
        EXPECT_LT(test::rel_l2(test_device().download_as<float>(out), row), 1e-6) << (greedy ? "greedy" : "sample") << " asym " << asymmetric;
        const auto st = test_device().download_as<uint32_t>(step);
        EXPECT_EQ(st, (std::vector<uint32_t>{8, 1, 0, 10})) << (greedy ? "greedy" : "sample");
      }
    }
  }
}

class SamplerDistributionTest : public ::testing::TestWithParam<kernels::SamplerConfig> {};

TEST_P(SamplerDistributionTest, SeededDrawsFollowTheReferenceDistribution) {
  const auto config = GetParam();
  const uint32_t vocab = config.vocab, draws = 1500, window_len = 5;
  auto logits = test::random_floats(vocab, 7, 1.5f);
  std::vector<uint32_t> toks(16 + draws, 0);
  std::vector<uint32_t> recent = {3, 9, 9, 20, 41};
  std::copy(recent.begin(), recent.end(), toks.begin());
  Rig rig(config, logits, toks);
  reference::SamplingSettings s{.temperature = 0.8f, .top_p = 0.92f, .min_p = 0.03f, .repetition_penalty = 1.3f,
                                .top_k = std::min(20u, config.max_top_k)};
  kernels::SamplerParams p{.vocab = vocab, .temperature = s.temperature, .top_k = s.top_k, .top_p = s.top_p,
                           .min_p = s.min_p, .repetition_penalty = s.repetition_penalty, .window_start = 0,
                           .window_len = window_len, .seed = 1234};
  // Same seed and step: same token.
  p.step = 77;
  p.out_slot = 16;
  uint32_t first = rig.run(p, false);
  EXPECT_EQ(rig.run(p, false), first);
  // Many draws, one submit each (the step counter changes; the bind groups do not).
  for (uint32_t i = 0; i < draws; i++) {
    p.step = i;
    p.out_slot = 16 + i;
    kernels::upload_params(test_device(), rig.params, p);
    gpu::Recorder rec(test_device());
    rig.sampler.record_sample(rec, rig.groups);
    rec.submit();
  }
  auto got = test_device().download_as<uint32_t>(rig.tokens, 16 * 4, draws);
  auto ref = reference::sampling_distribution(logits, recent, s);
  std::vector<double> hist(vocab, 0.0);
  for (uint32_t id : got) {
    ASSERT_LT(id, vocab);
    EXPECT_GT(ref[id], 0.0) << "drew id " << id << " which the reference excludes";
    hist[id] += 1.0 / draws;
  }
  double tv = 0;
  for (uint32_t i = 0; i < vocab; i++) tv += 0.5 * std::abs(hist[i] - ref[i]);
  // Sampling noise alone gives about 0.03 here at 1500 draws; a wrong filter or penalty gives > 0.1.
  EXPECT_LT(tv, 0.07);
}

INSTANTIATE_TEST_SUITE_P(Configs, SamplerDistributionTest,
                         ::testing::Values(kernels::SamplerConfig{.vocab = 50, .partials = 4, .max_top_k = 64,
                                                                  .sort_size = 128, .workgroup = 64},
                                           // Small buffers: several selection rounds in both stages.
                                           kernels::SamplerConfig{.vocab = 50, .partials = 2, .max_top_k = 16,
                                                                  .sort_size = 32, .workgroup = 32}),
                         [](const auto& info) { return std::string(info.param.max_top_k == 64 ? "k64" : "k16_small_buffers"); });
