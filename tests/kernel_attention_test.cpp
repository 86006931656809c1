// Attention kernels (flash-decoding with its combine, tiled causal prefill) against the CPU
// reference. Cache rows past the attended range hold poison, so reading them fails the test.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/step.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

struct Cache {
  std::vector<float> k, v;
};

// Random rows for positions < valid, poison beyond.
Cache make_cache(uint32_t positions, uint32_t valid, uint32_t KV, uint32_t row, uint32_t seed) {
  Cache c{test::random_floats(size_t(positions) * KV * row, seed, 1.5f), test::random_floats(size_t(positions) * KV * row, seed + 1)};
  for (size_t e = size_t(valid) * KV * row; e < c.k.size(); e++) c.k[e] = c.v[e] = test::kPoison;
  return c;
}

}  // namespace

class AttentionDecodeTest : public ::testing::TestWithParam<bool> {};

TEST_P(AttentionDecodeTest, MatchesReferenceForLengthsAndBlockCounts) {
  const bool subgroups = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  auto& dev = test_device();
  const uint32_t H = 4, KV = 2, positions = 1000;
  // Head size 64 on aligned rows takes the quad kernel (with subgroups), at two workgroup sizes;
  // 32 with a padded row the general one. Block counts include 3 and 48 (not dividing the dims).
  // The quad kernel's one-block width: the default (0), the narrowest (the tile workgroup: more
  // rounds over the keys) and one between.
  struct Shape {
    uint32_t d, padding, workgroup, direct;
  };
  for (auto [d, padding, workgroup, direct] : std::vector<Shape>{{64, 0, 64, 0}, {64, 0, 64, 64}, {64, 4, 128, 256}, {32, 3, 64, 0}}) {
    const uint32_t row = d + padding;
    kernels::AttentionDecode attn(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .padding = padding, .subgroups = subgroups,
                                                   .workgroup = workgroup, .max_blocks = 48, .direct_workgroup = direct});
    if (direct && subgroups && d == 64) {
      EXPECT_EQ(attn.direct_threads(), direct);
    }
    auto step = kernels::create_step_buffer(dev);
    for (uint32_t L : {1u, 7u, 100u, 1000u}) {
      Cache c = make_cache(positions, L, KV, row, L + d);
      auto q = test::random_floats(size_t(H) * d, L * 3 + d, 1.5f);
      auto qb = test::buffer_from(q, "q"), kb = test::buffer_from(c.k, "k cache"), vb = test::buffer_from(c.v, "v cache");
      auto ref = reference::attention(q, c.k, c.v, 1, H, KV, d, row, L - 1);
      kernels::upload_step(dev, step, {.start = L - 1, .rows = 1});
      for (uint32_t blocks : {1u, 3u, 16u, 48u}) {
        auto out = test::poisoned(size_t(H) * d, "out");
        auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&step});
        gpu::Recorder rec(dev);
        attn.record(rec, g, blocks);
        rec.submit();
        EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance)
            << "d " << d << " L " << L << " blocks " << blocks << " direct " << direct;
      }
    }
  }
}

TEST(AttentionDecode, ReadsQueriesInsideFusedQkv) {
  auto& dev = test_device();
  const uint32_t H = 4, KV = 2, d = 32, L = 9, stride = (H + 2 * KV) * d;
  Cache c = make_cache(16, L, KV, d, 3);
  auto qkv = test::random_floats(stride, 4);
  std::vector<float> q(qkv.begin(), qkv.begin() + H * d);
  auto qb = test::buffer_from(qkv, "qkv"), kb = test::buffer_from(c.k, "k"), vb = test::buffer_from(c.v, "v");
  auto out = test::poisoned(H * d, "out");
  auto step = kernels::create_step_buffer(dev);
  kernels::upload_step(dev, step, {.start = L - 1, .rows = 1});
  kernels::AttentionDecode attn(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .q_stride = stride});
  auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&step});
  gpu::Recorder rec(dev);
  attn.record(rec, g, 4);
  rec.submit();
  auto ref = reference::attention(q, c.k, c.v, 1, H, KV, d, d, L - 1);
  EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance);
  EXPECT_THROW(attn.record(rec, g, 65), Error);
}

// Batched decode: one dispatch over several sequences, each with its own length, query row and
// cache slot (slots at seq_stride in one buffer). The entries list slots out of order and skip
// one, whose output row must stay untouched.
TEST_P(AttentionDecodeTest, StepsSeveralSequencesInOneDispatch) {
  const bool subgroups = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  auto& dev = test_device();
  // With subgroups: head size 64 (the quad kernel); without: 32 on a padded row.
  const uint32_t H = 4, KV = 2, d = subgroups ? 64 : 32, padding = subgroups ? 4 : 3, row = d + padding, positions = 200, slots = 4;
  const uint32_t stride = positions * KV * row;
  const std::vector<uint32_t> seqs{2, 0, 3}, lengths{150, 1, 37};
  std::vector<float> k, v;
  std::vector<Cache> caches;
  for (uint32_t s = 0; s < slots; s++) {
    caches.push_back(make_cache(positions, positions, KV, row, 10 + s));
    k.insert(k.end(), caches.back().k.begin(), caches.back().k.end());
    v.insert(v.end(), caches.back().v.begin(), caches.back().v.end());
  }
  auto q = test::random_floats(size_t(slots) * H * d, 5, 1.5f);
  auto qb = test::buffer_from(q, "q"), kb = test::buffer_from(k, "k"), vb = test::buffer_from(v, "v");
  std::vector<kernels::StepParams> entries;
  for (size_t i = 0; i < seqs.size(); i++) entries.push_back({.start = lengths[i] - 1, .rows = 1, .seq = seqs[i]});
  auto steps = dev.create_storage(entries.size() * sizeof(kernels::StepParams), "steps");
  kernels::upload_steps(dev, steps, entries);
  kernels::AttentionDecode attn(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .padding = padding, .subgroups = subgroups,
                                                 .max_blocks = 8, .max_sequences = slots, .seq_stride = stride});
  for (uint32_t blocks : {1u, 3u, 8u}) {
    auto out = test::poisoned(size_t(slots) * H * d, "out");
    auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&steps});
    gpu::Recorder rec(dev);
    attn.record(rec, g, blocks, static_cast<uint32_t>(seqs.size()));
    rec.submit();
    auto got = test::read_floats(out, size_t(slots) * H * d);
    for (size_t i = 0; i < seqs.size(); i++) {
      const uint32_t s = seqs[i];
      std::vector<float> qs(q.begin() + size_t(s) * H * d, q.begin() + size_t(s + 1) * H * d);
      auto ref = reference::attention(qs, caches[s].k, caches[s].v, 1, H, KV, d, row, lengths[i] - 1);
      std::vector<float> row_out(got.begin() + size_t(s) * H * d, got.begin() + size_t(s + 1) * H * d);
      EXPECT_LT(test::rel_l2(row_out, ref), test::kF32Tolerance) << "sequence " << s << " blocks " << blocks;
    }
    for (size_t e = size_t(1) * H * d; e < size_t(2) * H * d; e++) ASSERT_EQ(got[e], test::kPoison) << "slot 1 was not stepped";
  }
  auto spare = test::poisoned(size_t(slots) * H * d, "out");
  gpu::Recorder rec(dev);
  EXPECT_THROW(attn.record(rec, attn.bind({&qb}, {&kb}, {&vb}, {&spare}, {&steps}), 1, slots + 1), Error);  // more than max_sequences
}

// norm_rope_kv: the raw token row of a fused qkv tensor in, the per-head q/k RMSNorm, RoPE and
// KV append done inside the dispatch. The cache row of the token holds poison before the
// dispatch (reading it would poison the output) and must hold the normed, rotated k and the raw v
// after; every other row stays as it was. Several sequences at once, block counts that leave
// blocks empty or split the token's block, and L = 1 (no cached key at all).
TEST(AttentionDecode, NormRopeKvInsideTheAttention) {
  if (!test_device().has_subgroups()) GTEST_SKIP() << "no subgroups (the fused path is the quad kernel's)";
  auto& dev = test_device();
  const uint32_t H = 4, KV = 2, d = 64, half = d / 2, positions = 120, slots = 3;
  const float eps = 1e-5f;
  for (uint32_t padding : {0u, 4u}) {
    const uint32_t row = d + padding, Q = H * d, stride = (H + 2 * KV) * d + 8, seq_stride = positions * KV * row;
    std::vector<float> cos(size_t(positions) * half), sin(cos.size());
    for (uint32_t p = 0; p < positions; p++)
      for (uint32_t i = 0; i < half; i++) {
        double a = p * std::pow(1e4, -2.0 * i / d);
        cos[size_t(p) * half + i] = float(std::cos(a));
        sin[size_t(p) * half + i] = float(std::sin(a));
      }
    auto qw = test::random_floats(d, 40 + padding), kw = test::random_floats(d, 41 + padding);
    const std::vector<uint32_t> seqs{2, 0}, lengths{97, 1};  // slot 1 is not stepped
    auto qkv = test::random_floats(size_t(slots) * stride, 42 + padding, 2.0f);
    std::vector<float> k, v;
    std::vector<Cache> caches;
    for (uint32_t s = 0; s < slots; s++) {
      const uint32_t L = s == 2 ? lengths[0] : s == 0 ? lengths[1] : positions;
      caches.push_back(make_cache(positions, L - 1, KV, row, 50 + s + padding));
      k.insert(k.end(), caches.back().k.begin(), caches.back().k.end());
      v.insert(v.end(), caches.back().v.begin(), caches.back().v.end());
    }
    std::vector<kernels::StepParams> entries;
    for (size_t i = 0; i < seqs.size(); i++) entries.push_back({.start = lengths[i] - 1, .rows = 1, .seq = seqs[i]});
    auto steps = dev.create_storage(entries.size() * sizeof(kernels::StepParams), "steps");
    kernels::upload_steps(dev, steps, entries);
    auto qwb = test::buffer_from(qw, "q_norm"), kwb = test::buffer_from(kw, "k_norm");
    auto cb = test::buffer_from(cos, "cos"), sb = test::buffer_from(sin, "sin"), qb = test::buffer_from(qkv, "qkv");
    kernels::AttentionDecode attn(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .padding = padding, .q_stride = stride,
                                                   .subgroups = true, .max_blocks = 8, .max_sequences = slots, .seq_stride = seq_stride,
                                                   .norm_rope_kv = true, .k_offset = Q, .v_offset = Q + KV * d, .eps = eps});
    ASSERT_TRUE(attn.fuses_norm_rope_kv());
    for (uint32_t blocks : {1u, 3u, 8u}) {
      auto kb = test::buffer_from(k, "k"), vb = test::buffer_from(v, "v");
      auto out = test::poisoned(size_t(slots) * H * d, "out");
      auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&steps}, {{&qwb}, {&kwb}, {&cb}, {&sb}});
      gpu::Recorder rec(dev);
      attn.record(rec, g, blocks, static_cast<uint32_t>(seqs.size()));
      rec.submit();
      auto got = test::read_floats(out, size_t(slots) * H * d);
      auto kgot = test::read_floats(kb, k.size()), vgot = test::read_floats(vb, v.size());
      std::vector<float> kref = k, vref = v;
      for (size_t i = 0; i < seqs.size(); i++) {
        const uint32_t s = seqs[i], pos = lengths[i] - 1;
        const float* tok = &qkv[size_t(s) * stride];
        std::vector<float> q(tok, tok + Q), kt(tok + Q, tok + Q + KV * d), vt(tok + Q + KV * d, tok + Q + 2 * KV * d);
        q = reference::rmsnorm(q, qw, H, d, eps);
        kt = reference::rmsnorm(kt, kw, KV, d, eps);
        reference::rope(q, 1, H, d, pos, cos, sin);
        reference::rope(kt, 1, KV, d, pos, cos, sin);
        Cache c = caches[s];
        for (uint32_t h = 0; h < KV; h++)
          for (uint32_t e = 0; e < d; e++) {
            const size_t at = (size_t(pos) * KV + h) * row + e;
            c.k[at] = kref[size_t(s) * seq_stride + at] = kt[h * d + e];
            c.v[at] = vref[size_t(s) * seq_stride + at] = vt[h * d + e];
          }
        auto ref = reference::attention(q, c.k, c.v, 1, H, KV, d, row, pos);
        std::vector<float> row_out(got.begin() + size_t(s) * H * d, got.begin() + size_t(s + 1) * H * d);
        EXPECT_LT(test::rel_l2(row_out, ref), test::kF32Tolerance) << "sequence " << s << " blocks " << blocks << " padding " << padding;
      }
      EXPECT_EQ(vgot, vref) << "v is appended exactly, nothing else written; blocks " << blocks;
      std::vector<float> written_got, written_ref;  // the appended k rows (the rest is poison or old keys)
      for (size_t e = 0; e < k.size(); e++) {
        if (kref[e] != k[e]) {
          written_got.push_back(kgot[e]);
          written_ref.push_back(kref[e]);
        } else {
          ASSERT_EQ(kgot[e], k[e]) << "k cache element " << e << " changed; blocks " << blocks;
        }
      }
      ASSERT_EQ(written_ref.size(), seqs.size() * KV * d);
      EXPECT_LT(test::rel_l2(written_got, written_ref), test::kF32Tolerance) << "blocks " << blocks;
    }
    EXPECT_THROW(attn.bind({&qb}, {&qb}, {&qb}, {&qb}, {&steps}), Error);  // it needs the norm weights and tables
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionDecodeTest, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "subgroup" : "shared"); });

// The prefill kernels: param true = with subgroups, where head size 64 on aligned rows takes the
// quad kernel (attention_prefill_quad.wgsl); false = the one-query-per-thread kernel everywhere.
class AttentionPrefillTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !test_device().has_subgroups()) GTEST_SKIP() << "device has no subgroups";
  }
};

TEST_P(AttentionPrefillTest, CausalMatchesReferenceForTokenCountsAndStarts) {
  auto& dev = test_device();
  const uint32_t H = 4, KV = 2, positions = 128;
  for (auto [d, padding] : std::vector<std::pair<uint32_t, uint32_t>>{{64, 0}, {32, 3}, {64, 4}}) {
    const uint32_t row = d + padding;
    kernels::AttentionPrefill attn(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .padding = padding, .subgroups = GetParam()});
    auto step = kernels::create_step_buffer(dev);
    for (uint32_t T : {1u, 5u, 20u, 70u})
      for (uint32_t start : {0u, 13u}) {
        Cache c = make_cache(positions, start + T, KV, row, T + start + d);
        auto q = test::random_floats(size_t(T) * H * d, T * 5 + start, 1.5f);
        auto qb = test::buffer_from(q, "q"), kb = test::buffer_from(c.k, "k"), vb = test::buffer_from(c.v, "v");
        auto out = test::poisoned(q.size(), "out");
        kernels::upload_step(dev, step, {.start = start, .rows = T});
        auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&step});
        gpu::Recorder rec(dev);
        attn.record(rec, g, T);
        rec.submit();
        auto ref = reference::attention(q, c.k, c.v, T, H, KV, d, row, start);
        EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance)
            << "d " << d << " T " << T << " start " << start;
      }
  }
}

// Runs one prefill of T queries at start over a fresh cache and compares with the reference.
static void check_prefill(const kernels::AttentionConfig& config, uint32_t T, uint32_t start, uint32_t seed) {
  auto& dev = test_device();
  const uint32_t H = config.heads, KV = config.kv_heads, d = config.head_dim, row = d + config.padding;
  kernels::AttentionPrefill attn(test_kernels(), config);
  Cache c = make_cache(start + T + 9, start + T, KV, row, seed);  // poison past the last key
  auto q = test::random_floats(size_t(T) * H * d, seed + 1, 1.5f);
  auto qb = test::buffer_from(q, "q"), kb = test::buffer_from(c.k, "k"), vb = test::buffer_from(c.v, "v");
  auto out = test::poisoned(q.size(), "out");
  auto step = kernels::create_step_buffer(dev);
  kernels::upload_step(dev, step, {.start = start, .rows = T});
  auto g = attn.bind({&qb}, {&kb}, {&vb}, {&out}, {&step});
  gpu::Recorder rec(dev);
  attn.record(rec, g, T);
  rec.submit();
  auto ref = reference::attention(q, c.k, c.v, T, H, KV, d, row, start);
  EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance)
      << "d " << d << " T " << T << " start " << start << " BQ " << config.query_tile << " BK " << config.key_tile;
}

TEST_P(AttentionPrefillTest, SmallTiles) {
  check_prefill({.heads = 4, .kv_heads = 1, .head_dim = 64, .subgroups = GetParam(), .query_tile = 4, .key_tile = 8}, 11, 4, 77);
}

// Lengths that are not multiples of the query or key tile, each with earlier tokens in the cache,
// under the default geometry and a wider one (64 queries, 64-key tiles; fewer lengths: lavapipe is slow).
TEST_P(AttentionPrefillTest, AwkwardLengthsAfterEarlierTokens) {
  for (auto [bq, bk] : std::vector<std::pair<uint32_t, uint32_t>>{{32, 32}, {64, 64}})
    for (auto [T, start] : bq == 32 ? std::vector<std::pair<uint32_t, uint32_t>>{{1, 7}, {17, 3}, {100, 29}, {201, 50}}
                                    : std::vector<std::pair<uint32_t, uint32_t>>{{70, 13}})
      check_prefill({.heads = 4, .kv_heads = 2, .head_dim = 64, .subgroups = GetParam(), .query_tile = bq, .key_tile = bk}, T,
                    start, T * 7 + start + bq);
  // head_dim not a multiple of 4: the one-query kernel, subgroups or not
  check_prefill({.heads = 6, .kv_heads = 3, .head_dim = 20, .padding = 1, .subgroups = GetParam()}, 100, 29, 5);
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionPrefillTest, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "subgroup" : "shared"); });
