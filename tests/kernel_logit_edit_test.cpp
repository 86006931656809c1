// Logit edits and logprobs on the GPU: the edit adds the biases and masks exactly as the CPU does
// (and leaves memory past the vocabulary alone); a masked id is never sampled, greedy or not, even
// where its logit was the best; logprobs equal a CPU log-softmax, top entries in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include "kernel_test_util.h"
#include "kernels/logit_edit.h"
#include "kernels/logprobs.h"
#include "kernels/sampler.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

constexpr float kMasked = -3.4e38f;  // logit_edit.wgsl's MASKED

std::vector<uint32_t> random_mask(uint32_t vocab, uint32_t seed, double keep) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution bit(keep);
  std::vector<uint32_t> m((vocab + 31) / 32, 0);
  for (uint32_t i = 0; i < vocab; i++)
    if (bit(rng)) m[i / 32] |= 1u << (i % 32);
  return m;
}

bool on(const std::vector<uint32_t>& m, uint32_t id) { return (m[id / 32] >> (id % 32)) & 1; }

void run_edit(const kernels::LogitEdit& edit, const gpu::Buffer& logits, const gpu::Buffer& buf, const std::vector<uint32_t>& mask,
              const std::vector<std::pair<uint32_t, float>>& bias) {
  const auto words = edit.pack(mask, bias);
  test_device().upload(buf, std::span<const uint32_t>(words));
  gpu::Recorder rec(test_device());
  edit.record(rec, edit.bind({&logits}, {&buf}), !mask.empty(), static_cast<uint32_t>(bias.size()));
  rec.submit();
}

}  // namespace

TEST(LogitEdit, BiasThenMaskMatchTheCpu) {
  for (uint32_t vocab : {1000u, 65536u + 17u}) {
    kernels::LogitEdit edit(test_kernels(), vocab);
    auto logits = test::random_floats(vocab, vocab);
    std::vector<float> padded = logits;
    padded.resize(vocab + 64, 12345.0f);  // poison past the vocabulary: must stay
    auto buf = test::buffer_from(padded, "logits");
    auto editbuf = test_device().create_storage(edit.buffer_bytes(), "edit");
    const auto mask = random_mask(vocab, vocab + 1, 0.3);
    std::vector<std::pair<uint32_t, float>> bias = {{0, 100.0f}, {vocab - 1, -100.0f}, {vocab / 2, 2.5f}, {vocab / 3, -0.75f},
                                                    {vocab + 5, 50.0f}};  // past the vocabulary: ignored
    run_edit(edit, buf, editbuf, mask, bias);
    const auto got = test_device().download_as<float>(buf);
    std::vector<float> want = padded;
    for (const auto& [id, b] : bias)
      if (id < vocab) want[id] += b;
    for (uint32_t i = 0; i < vocab; i++)
      if (!on(mask, i)) want[i] = kMasked;
    for (uint32_t i = 0; i < vocab + 64; i++) ASSERT_EQ(got[i], want[i]) << "vocab " << vocab << " id " << i;
    // Bias only: nothing masked.
    test_device().upload(buf, std::span<const float>(padded));
    run_edit(edit, buf, editbuf, {}, {{7, 1.5f}});
    const auto got2 = test_device().download_as<float>(buf);
    for (uint32_t i = 0; i < vocab; i++) ASSERT_EQ(got2[i], padded[i] + (i == 7 ? 1.5f : 0.0f)) << i;
  }
}

TEST(LogitEdit, MaskedIdsAreNeverSampled) {
  const uint32_t vocab = 1000;
  kernels::LogitEdit edit(test_kernels(), vocab);
  kernels::Sampler sampler(test_kernels(), {.vocab = vocab, .partials = 4, .one_dispatch_greedy = true});
  auto logits = test::random_floats(vocab, 5);
  // The allowed ids are among the worst logits: unmasked, any sampler would pick others.
  std::vector<uint32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return logits[a] < logits[b]; });
  const std::vector<uint32_t> allowed = {order[0], order[1], order[2]};
  std::vector<uint32_t> mask((vocab + 31) / 32, 0);
  for (uint32_t id : allowed) mask[id / 32] |= 1u << (id % 32);
  auto buf = test::buffer_from(logits, "logits");
  auto editbuf = test_device().create_storage(edit.buffer_bytes(), "edit");
  auto tokens = test::buffer_from(std::vector<uint32_t>(8, 0), "tokens");
  auto params = test_device().create_storage(sizeof(kernels::SamplerParams), "params");
  auto groups = sampler.bind({&buf}, {&tokens}, {&params});
  std::set<uint32_t> seen;
  for (uint32_t step = 0; step < 48; step++) {
    test_device().upload(buf, std::span<const float>(logits));
    kernels::upload_params(test_device(), params,
                           {.vocab = vocab, .temperature = step % 3 == 0 ? 0.0f : 2.0f, .seed = 99, .step = step, .out_slot = 3});
    gpu::Recorder rec(test_device());
    edit.record(rec, edit.bind({&buf}, {&editbuf}), true, 0);
    const auto words = edit.pack(mask, {});
    test_device().upload(editbuf, std::span<const uint32_t>(words));
    step % 2 ? sampler.record_sample(rec, groups) : sampler.record_greedy(rec, groups);
    rec.submit();
    const uint32_t id = test_device().download_as<uint32_t>(tokens, 12, 1)[0];
    ASSERT_TRUE(std::count(allowed.begin(), allowed.end(), id)) << "step " << step << " sampled " << id;
    seen.insert(id);
  }
  EXPECT_GE(seen.size(), 2u);  // sampling does draw among the allowed ones
}

TEST(Logprobs, EqualTheCpuLogSoftmax) {
  kernels::Logprobs lp(test_kernels());
  for (uint32_t vocab : {37u, 1000u, 65536u + 5u}) {
    auto logits = test::random_floats(vocab, vocab * 3, 3.0f);
    const uint32_t sampled = vocab / 2 + 1;
    auto buf = test::buffer_from(logits, "logits");
    auto tokens = test::buffer_from(std::vector<uint32_t>{0, 0, sampled, 0}, "tokens");
    auto params = test_device().create_storage(sizeof(kernels::LogprobParams), "params");
    auto out = test::buffer_from(std::vector<uint32_t>(kernels::Logprobs::kOutBytes / 4, 0xdeadbeefu), "out");  // poisoned
    auto group = lp.bind({&buf}, {&tokens}, {&params}, {&out});
    double m = -1e300, sum = 0;
    for (float v : logits) m = std::max<double>(m, v);
    for (float v : logits) sum += std::exp(double(v) - m);
    const double lse = m + std::log(sum);
    std::vector<uint32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
    for (uint32_t top : {0u, 1u, 5u, 20u}) {
      const kernels::LogprobParams p{.vocab = vocab, .slot = 2, .top = top};
      test_device().upload(params, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p), sizeof p));
      gpu::Recorder rec(test_device());
      lp.record(rec, group);
      rec.submit();
      const auto r = kernels::Logprobs::unpack(test_device().download_as<uint32_t>(out), top);
      EXPECT_EQ(r.id, sampled);
      EXPECT_NEAR(r.logprob, logits[sampled] - lse, 1e-4) << vocab;
      ASSERT_EQ(r.top.size(), std::min(top, vocab)) << vocab;
      for (uint32_t i = 0; i < r.top.size(); i++) {
        EXPECT_EQ(r.top[i].first, order[i]) << "vocab " << vocab << " rank " << i;
        EXPECT_NEAR(r.top[i].second, logits[order[i]] - lse, 1e-4);
      }
    }
  }
}

TEST(Logprobs, AfterAMaskOnlyAllowedIdsAreListed) {
  const uint32_t vocab = 1000;
  kernels::LogitEdit edit(test_kernels(), vocab);
  kernels::Logprobs lp(test_kernels());
  auto logits = test::random_floats(vocab, 77);
  auto buf = test::buffer_from(logits, "logits");
  auto editbuf = test_device().create_storage(edit.buffer_bytes(), "edit");
  std::vector<uint32_t> mask((vocab + 31) / 32, 0);
  for (uint32_t id : {3u, 500u, 999u}) mask[id / 32] |= 1u << (id % 32);
  run_edit(edit, buf, editbuf, mask, {{500, 1.0f}});
  auto tokens = test::buffer_from(std::vector<uint32_t>{500}, "tokens");
  auto params = test_device().create_storage(sizeof(kernels::LogprobParams), "params");
  auto out = test_device().create_storage(kernels::Logprobs::kOutBytes, "out");
  const kernels::LogprobParams p{.vocab = vocab, .slot = 0, .top = 5};
  test_device().upload(params, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p), sizeof p));
  gpu::Recorder rec(test_device());
  lp.record(rec, lp.bind({&buf}, {&tokens}, {&params}, {&out}));
  rec.submit();
  const auto r = kernels::Logprobs::unpack(test_device().download_as<uint32_t>(out), 5);
  // The distribution is over the three allowed ids only (the bias included).
  const double a = logits[3], b = logits[500] + 1.0, c = logits[999];
  const double m = std::max({a, b, c}), lse = m + std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m));
  EXPECT_NEAR(r.logprob, b - lse, 1e-5);
  ASSERT_EQ(r.top.size(), 3u);
  double total = 0;
  for (const auto& [id, l] : r.top) {
    EXPECT_TRUE(id == 3 || id == 500 || id == 999) << id;
    total += std::exp(l);
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
}
