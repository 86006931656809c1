// The server's slots (src/server/slot_cache.h, scheduler.h): prompt reuse prefills only what a
// slot's caches do not hold, with output identical to a cold run of the same prompt (whole
// history, a prompt diverging in the middle of an earlier prompt, one diverging inside the reply);
// n choices share one prefill and each equals a single run with its seed. In process on the tiny
// model, where the generated ids and the prefill counters can be read exactly.
#include <gtest/gtest.h>

#include <chrono>

#include "lfm2_test_pack.h"
#include "llm/session.h"
#include "server/api_error.h"
#include "server/scheduler.h"

using namespace ember;

namespace {

constexpr uint32_t kParallel = 3, kInterval = 8;
const llm::SamplingOptions kGreedy{.temperature = 0};

llm::Session& session() {
  static llm::Session s(test::lfm2_test_pack("tiny"), {.model = {.prefill_chunk = 16, .quiet = true}, .sequences = kParallel});
  return s;
}

std::unique_ptr<server::Scheduler> scheduler() {
  return std::make_unique<server::Scheduler>(session(), server::SchedulerOptions{.parallel = kParallel, .queue = 4, .snapshot_interval = kInterval});
}

// Waits for the job's end; its generated ids.
std::vector<uint32_t> finish(const std::shared_ptr<server::Job>& job) {
  server::Job::Update u;
  for (int i = 0; i < 1200 && !u.done; i++) u = job->wait(std::chrono::milliseconds(100));
  EXPECT_TRUE(u.done);
  EXPECT_NE(u.finish, server::Finish::Error) << u.error;
  return job->ids();
}

server::JobRequest request(std::vector<uint32_t> prompt, uint32_t max_tokens, llm::SamplingOptions sampling = kGreedy) {
  return {.prompt = std::move(prompt), .sampling = sampling, .max_tokens = max_tokens};
}

// The ids a fresh scheduler (no slot holds anything) generates for `prompt`.
std::vector<uint32_t> cold(const std::vector<uint32_t>& prompt, uint32_t max_tokens, llm::SamplingOptions sampling = kGreedy) {
  auto s = scheduler();
  auto ids = finish(s->submit(request(prompt, max_tokens, sampling)));
  EXPECT_EQ(s->cached_tokens(), 0u);
  return ids;
}

std::vector<uint32_t> concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A prompt of ordinary ids (no special tokens) that no stop id cuts short.
std::vector<uint32_t> ids(uint32_t first, uint32_t n) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < n; i++) v.push_back(40 + (first + 7 * i) % 400);
  return v;
}

}  // namespace

// The acceptance criterion: turn 2 (turn 1's prompt, its reply, a new message) prefills only the
// new ids and generates what a cold run of the whole prompt does.
TEST(ServerSlots, SecondTurnPrefillsOnlyItsNewTokens) {
  const auto turn1 = ids(1, 21);
  std::vector<uint32_t> reply, second, prompt2;
  uint32_t kept = 0;
  {
    auto s = scheduler();
    reply = finish(s->submit(request(turn1, 12)));
    ASSERT_FALSE(reply.empty());
    // The slot keeps the prompt and the reply (all but the last id, unless decoded after a stop).
    auto info = s->slot_info();
    for (const auto& i : info) kept = std::max(kept, i.cached_tokens);
    EXPECT_GE(kept, turn1.size() + reply.size() - 1);
    EXPECT_LE(kept, turn1.size() + reply.size());
    prompt2 = concat(concat(turn1, reply), ids(5, 9));
    const uint64_t prefilled = s->prefilled_tokens();
    EXPECT_EQ(prefilled, turn1.size());
    auto job = s->submit(request(prompt2, 10));
    second = finish(job);
    EXPECT_EQ(job->cached_tokens(), kept);
    EXPECT_EQ(s->prefilled_tokens() - prefilled, prompt2.size() - kept) << "only the new ids are prefilled";
    EXPECT_EQ(s->cached_tokens(), kept);
    // It went to the slot that held turn 1.
    int reusing = 0;
    for (const auto& i : s->slot_info()) reusing += i.reused_tokens == kept && i.prompt == prompt2;
    EXPECT_EQ(reusing, 1);
  }
  EXPECT_EQ(second, cold(prompt2, 10));
}

// A prompt diverging in the middle of an earlier prompt restores the last conv snapshot before
// the divergence; one diverging inside the reply, the snapshot at the end of the prompt.
TEST(ServerSlots, PartialPrefixReuseEqualsColdRuns) {
  const auto turn1 = ids(2, 29);
  auto s = scheduler();
  const auto reply = finish(s->submit(request(turn1, 8)));
  ASSERT_GE(reply.size(), 3u) << "the tiny model stopped at once";

  // Diverges at position 19: the snapshot at 16 (a multiple of the interval) is the last before.
  auto edited = std::vector<uint32_t>(turn1.begin(), turn1.begin() + 19);
  edited = concat(edited, ids(9, 6));
  auto job = s->submit(request(edited, 8));
  const auto edited_ids = finish(job);
  EXPECT_EQ(job->cached_tokens(), 16u);

  // The slot now holds `edited` and its reply; turn 1 again diverges from it at 19 as well.
  // A prompt that takes 2 ids of that reply and then goes elsewhere: the end of `edited`.
  const auto reply2 = edited_ids;
  ASSERT_GE(reply2.size(), 3u);
  auto inside = concat(concat(edited, {reply2[0], reply2[1]}), ids(11, 4));
  if (inside[edited.size() + 2] == reply2[2]) inside[edited.size() + 2]++;  // really diverges there
  auto job2 = s->submit(request(inside, 8));
  const auto inside_ids = finish(job2);
  EXPECT_EQ(job2->cached_tokens(), edited.size());
  s.reset();
  EXPECT_EQ(edited_ids, cold(edited, 8));
  EXPECT_EQ(inside_ids, cold(inside, 8));
}

// n = 2: both choices come from one prefill, and each is what a single request with its seed
// (seed, seed + 1) generates.
TEST(ServerSlots, TwoChoicesShareThePrefillAndMatchSingleRuns) {
  const auto prompt = ids(3, 13);
  const llm::SamplingOptions sampling{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 1234};
  std::vector<std::vector<uint32_t>> choices;
  {
    auto s = scheduler();
    auto jobs = s->submit(request(prompt, 10, sampling), 2);
    ASSERT_EQ(jobs.size(), 2u);
    for (auto& j : jobs) choices.push_back(finish(j));
    EXPECT_EQ(jobs[0]->request().choice, 0u);
    EXPECT_EQ(jobs[1]->request().choice, 1u);
    EXPECT_EQ(s->prefilled_tokens(), prompt.size()) << "the prompt is prefilled once";
    EXPECT_THROW(s->submit(request(prompt, 4), kParallel + 1), server::ApiError);
  }
  auto second = sampling;
  second.seed = 1235;
  EXPECT_EQ(choices[0], cold(prompt, 10, sampling));
  EXPECT_EQ(choices[1], cold(prompt, 10, second));
  EXPECT_NE(choices[0], choices[1]);
}

// Three slots, three requests at once, then the same three prompts extended: each goes back to
// the slot that holds its history (longest common prefix wins over least recently used).
TEST(ServerSlots, EachRequestFindsItsOwnSlot) {
  auto s = scheduler();
  std::vector<std::vector<uint32_t>> prompts, replies;
  std::vector<std::shared_ptr<server::Job>> jobs;
  for (uint32_t i = 0; i < kParallel; i++) {
    prompts.push_back(ids(100 + 13 * i, 10 + i));
    jobs.push_back(s->submit(request(prompts.back(), 6)));
  }
  for (auto& j : jobs) replies.push_back(finish(j));
  jobs.clear();
  for (uint32_t i = kParallel; i-- > 0;) {  // the other order: LRU alone would pick wrong
    auto p = concat(concat(prompts[i], replies[i]), ids(7, 3));
    auto job = s->submit(request(p, 4));
    finish(job);
    EXPECT_GE(job->cached_tokens(), prompts[i].size() + replies[i].size() - 1) << "request " << i;
  }
}

// A prompt no slot can reuse goes to the least recently used slot: the three most recent
// conversations keep their caches, the oldest loses its.
TEST(ServerSlots, UnrelatedPromptTakesTheLeastRecentlyUsedSlot) {
  auto s = scheduler();
  std::vector<std::vector<uint32_t>> histories;
  for (uint32_t i = 0; i <= kParallel; i++) {  // one more conversation than slots, one at a time
    auto prompt = ids(200 + 17 * i, 9);
    auto reply = finish(s->submit(request(prompt, 5)));
    histories.push_back(concat(prompt, reply));
  }
  for (uint32_t i = kParallel + 1; i-- > 0;) {  // newest first: each finds its history, the oldest none
    auto job = s->submit(request(concat(histories[i], ids(3, 2)), 3));
    finish(job);
    if (i == 0) {
      EXPECT_EQ(job->cached_tokens(), 0u) << "the oldest conversation's slot went to the newest";
    } else {
      EXPECT_GE(job->cached_tokens(), histories[i].size() - 1) << "conversation " << i;
    }
  }
}
