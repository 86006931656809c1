// Lfm2BatchDecoder against Lfm2Model's own decode (itself checked against the CPU reference in
// lfm2_engine_test): sequences with prompts of different lengths decoded together pick the same
// greedy tokens as each decoded alone, with logits within 1e-4 rel L2 (the batched matvec sums
// in another order); sequences join after their prefill and leave between steps, leaving holes
// in the rows; a row is reused by a new sequence. The rows are the slots of one SequenceCaches,
// and the attention, q/k norm + RoPE + KV write and conv kernels step all of them at once.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/lfm2_batch.h"
#include "llm/lfm2_model.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

constexpr double kBatchLogitTolerance = 1e-4;

std::vector<uint32_t> prompt_ids(uint32_t vocab, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> ids(n);
  for (auto& id : ids) id = rng() % vocab;
  return ids;
}

uint32_t argmax(const std::vector<float>& v) { return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

void put_token(llm::Lfm2Model& m, uint32_t token) {
  m.device().upload(m.tokens(), std::span<const uint32_t>(&token, 1), uint64_t(m.position()) * 4);
}

// One sequence of a run: on `row`, it is prefilled at step `join` and then decodes `steps`
// greedy tokens, one per step, and leaves.
struct Sequence {
  uint32_t row, join, prompt_len, steps;
};

// What a sequence does decoded alone: logits[0] after the prompt, logits[k + 1] after decoding
// tokens[k] = argmax(logits[k]).
struct Trace {
  std::vector<uint32_t> tokens;
  std::vector<std::vector<float>> logits;
};

Trace decode_alone(const formats::LlmPack& pack, const std::vector<uint32_t>& prompt, uint32_t steps) {
  llm::Lfm2Model m(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true});
  Trace t;
  m.prefill(prompt);
  t.logits.push_back(m.device().download_as<float>(m.logits()));
  for (uint32_t k = 0; k < steps; k++) {
    t.tokens.push_back(argmax(t.logits.back()));
    put_token(m, t.tokens.back());
    gpu::Recorder rec(m.device());
    m.record_decode(rec);
    rec.submit();
    t.logits.push_back(m.device().download_as<float>(m.logits()));
  }
  return t;
}

std::vector<float> row_of(const std::vector<float>& all, uint32_t r, uint32_t vocab) {
  return std::vector<float>(all.begin() + size_t(r) * vocab, all.begin() + size_t(r + 1) * vocab);
}

// Runs `sequences` through one batch decoder of `rows` rows and checks every step of every
// sequence against its decode alone.
void check_batch(const fs::path& pack_dir, uint32_t rows, const std::vector<Sequence>& sequences) {
  auto pack = formats::LlmPack::open(pack_dir);
  auto caches = llm::Lfm2Model::make_caches(test::test_device(), pack, rows);
  llm::Lfm2Model base(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true, .caches = caches});
  std::vector<std::unique_ptr<llm::Lfm2Model>> owned;
  std::vector<llm::Lfm2Model*> models{&base};
  for (uint32_t r = 1; r < rows; r++) {
    owned.push_back(std::make_unique<llm::Lfm2Model>(base, llm::ModelOptions{.prefill_chunk = 8, .quiet = true, .caches = caches, .cache_slot = r}));
    models.push_back(owned.back().get());
  }
  llm::Lfm2BatchDecoder batch(models);
  ASSERT_EQ(batch.rows(), rows);
  const uint32_t V = base.vocab();

  std::vector<std::vector<uint32_t>> prompts;
  std::vector<Trace> alone;
  for (size_t i = 0; i < sequences.size(); i++) {
    prompts.push_back(prompt_ids(V, sequences[i].prompt_len, 100 + static_cast<uint32_t>(i)));
    alone.push_back(decode_alone(pack, prompts.back(), sequences[i].steps));
  }
  std::vector<int> on_row(rows, -1);    // the sequence a row decodes now
  std::vector<uint32_t> done(sequences.size(), 0);
  uint32_t last_step = 0;
  for (const auto& s : sequences) last_step = std::max(last_step, s.join + s.steps);
  for (uint32_t step = 0; step <= last_step; step++) {
    // Leave: sequences that decoded all their tokens free their rows.
    for (uint32_t r = 0; r < rows; r++)
      if (on_row[r] >= 0 && done[on_row[r]] == sequences[on_row[r]].steps) on_row[r] = -1;
    // Join: prefill through the row's own model, as the server does.
    for (size_t i = 0; i < sequences.size(); i++) {
      const Sequence& s = sequences[i];
      if (s.join != step) continue;
      ASSERT_EQ(on_row[s.row], -1) << "test plan puts two sequences on row " << s.row;
      llm::Lfm2Model& m = *models[s.row];
      m.reset();
      m.prefill(prompts[i]);
      auto got = m.device().download_as<float>(m.logits());
      EXPECT_LT(test::rel_l2(got, alone[i].logits[0]), 1e-6) << "prompt logits of sequence " << i;
      if (s.steps > 0) put_token(m, argmax(got));
      on_row[s.row] = static_cast<int>(i);
    }
    std::vector<uint32_t> stepping;
    for (uint32_t r = 0; r < rows; r++)
      if (on_row[r] >= 0 && sequences[on_row[r]].join < step && done[on_row[r]] < sequences[on_row[r]].steps) stepping.push_back(r);
    if (stepping.empty()) continue;
    gpu::Recorder rec(test::test_device());
    batch.record(rec, stepping);
    rec.submit();
    auto all = test::test_device().download_as<float>(batch.logits());
    for (uint32_t r : stepping) {
      const int i = on_row[r];
      const uint32_t k = done[i]++;
      auto got = row_of(all, r, V);
      ASSERT_LT(test::rel_l2(got, alone[i].logits[k + 1]), kBatchLogitTolerance) << "sequence " << i << " on row " << r << " step " << k;
      if (k + 1 < sequences[i].steps) {
        const uint32_t next = argmax(got);
        ASSERT_EQ(next, alone[i].tokens[k + 1]) << "greedy token of sequence " << i << " at step " << k + 1;
        put_token(*models[r], next);
      }
    }
  }
  for (size_t i = 0; i < sequences.size(); i++) EXPECT_EQ(done[i], sequences[i].steps) << "sequence " << i;
}

}  // namespace

TEST(Lfm2Batch, OneRowMatchesDecodeAlone) { check_batch(test::lfm2_test_pack("tiny"), 1, {{0, 0, 5, 6}}); }

TEST(Lfm2Batch, ThreeRowsOfDifferentPromptsMatchDecodeAlone) {
  // Prompts within one prefill chunk and across chunks; the rows leave at different steps.
  check_batch(test::lfm2_test_pack("tiny"), 3, {{0, 0, 3, 8}, {1, 0, 9, 4}, {2, 0, 17, 6}});
}

TEST(Lfm2Batch, EightRowsJoinAndLeaveMidRun) {
  // Row 1 stays empty while rows above it decode; rows 0 and 4 take a second sequence after
  // the first leaves; row 7 joins last.
  check_batch(test::lfm2_test_pack("tiny"), 8,
              {{0, 0, 4, 3}, {2, 0, 11, 7}, {3, 1, 1, 6}, {4, 0, 6, 2}, {5, 2, 20, 5}, {6, 0, 2, 8},
               {0, 4, 7, 4}, {4, 3, 13, 5}, {1, 5, 5, 3}, {7, 6, 9, 2}});
}

// More rows than one batched matvec dispatch takes (16): the rows above 16 go through a second
// dispatch bound at their offset.
TEST(Lfm2Batch, MoreRowsThanOneDispatchTakes) {
  check_batch(test::lfm2_test_pack("tiny"), 18, {{0, 0, 3, 3}, {5, 0, 8, 4}, {15, 1, 2, 3}, {16, 0, 5, 4}, {17, 2, 10, 2}});
}

// The fused MLP candidate keeps its k-major down weight: the batch runs the fused MLP per row.
TEST(Lfm2Batch, FusedMlpCandidateMatchesDecodeAlone) {
  fs::path dir = fs::temp_directory_path() / "ember_batch_candidates" / std::to_string(getpid()) / "mlp_pair";
  fs::path pack = test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"mlpPair", true}, {"mlpSlices", 5}, {"mlpWorkgroup", 128}});
  check_batch(pack, 3, {{0, 0, 5, 4}, {1, 1, 9, 3}, {2, 0, 2, 5}});
  fs::remove_all(dir);
}

// KV rows with padding and several flash-decoding blocks: the per-row attention reads the
// layout its model wrote.
TEST(Lfm2Batch, PaddedCacheAndFlashBlocksMatchDecodeAlone) {
  fs::path dir = fs::temp_directory_path() / "ember_batch_candidates" / std::to_string(getpid()) / "padding_flash";
  fs::path pack = test::with_candidate(test::lfm2_test_pack("tiny"), dir, {{"padding", 3}, {"flash", true}, {"flashBlocks", 4}});
  check_batch(pack, 2, {{0, 0, 30, 4}, {1, 0, 3, 4}});
  fs::remove_all(dir);
}

// The server decodes a sequence alone again after batched steps moved its position: a lone
// decode step, which advances its step parameters on the GPU, first catches them up.
TEST(Lfm2Batch, LoneDecodeAfterBatchedStepsContinuesTheSequence) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  auto caches = llm::Lfm2Model::make_caches(test::test_device(), pack, 1);
  llm::Lfm2Model m(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true, .caches = caches});
  llm::Lfm2BatchDecoder batch({&m});
  const auto prompt = prompt_ids(m.vocab(), 6, 7);
  const Trace alone = decode_alone(pack, prompt, 5);
  m.prefill(prompt);
  for (uint32_t k = 0; k < 5; k++) {
    put_token(m, alone.tokens[k]);
    gpu::Recorder rec(m.device());
    const bool batched = k == 1 || k == 2;
    const std::vector<uint32_t> row0{0};
    if (batched) batch.record(rec, row0);
    else m.record_decode(rec);
    rec.submit();
    auto got = m.device().download_as<float>(batched ? batch.logits() : m.logits());
    ASSERT_LT(test::rel_l2(row_of(got, 0, m.vocab()), alone.logits[k + 1]), kBatchLogitTolerance) << "step " << k << (batched ? " (batched)" : " (alone)");
  }
}

TEST(Lfm2Batch, BadRowsAreClearErrors) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  auto caches = llm::Lfm2Model::make_caches(test::test_device(), pack, 2);
  llm::Lfm2Model a(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true, .caches = caches});
  llm::Lfm2Model b(a, {.prefill_chunk = 8, .quiet = true, .caches = caches, .cache_slot = 1});
  EXPECT_THROW(llm::Lfm2BatchDecoder(std::vector<llm::Lfm2Model*>{}), Error);
  // Rows must be the slots of one set of caches, in order.
  llm::Lfm2Model own(a, {.prefill_chunk = 8, .quiet = true});
  EXPECT_THROW(llm::Lfm2BatchDecoder({&a, &own}), Error);
  EXPECT_THROW(llm::Lfm2BatchDecoder({&b, &a}), Error);
  EXPECT_THROW(llm::Lfm2Model(a, {.quiet = true, .caches = caches, .cache_slot = 2}), Error);  // no such slot
  llm::Lfm2BatchDecoder batch({&a, &b});
  gpu::Recorder rec(test::test_device());
  const std::vector<uint32_t> unprefilled{1}, twice{0, 0}, outside{2};
  EXPECT_THROW(batch.record(rec, unprefilled), Error);
  a.prefill(prompt_ids(a.vocab(), 3, 1));
  EXPECT_THROW(batch.record(rec, twice), Error);
  EXPECT_THROW(batch.record(rec, outside), Error);
  EXPECT_EQ(a.position(), 3u);  // a refused step moves nothing
}
