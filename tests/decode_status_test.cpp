// No silently wrong tokens: kernels that assume all their workgroups run at once (the one-dispatch
// residual MLP, the one-dispatch greedy sampler) set a status word when a wait gives up, and every
// path that reads decode results back reports it as an error naming the kernel. The give-ups are
// forced on lavapipe through the kernels' test-only stall words (Lfm2Model::stall_for_tests,
// Sampler::stall_for_tests), which make every wait give up at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "gpu/readback_ring.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/generator.h"
#include "llm/lfm2_model.h"
#include "llm/logits.h"
#include "llm/session.h"
#include "server/scheduler.h"
#include "tune/ceilings.h"
#include "tune/decode_step.h"
#include "tune/llm_bench.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

const llm::SamplingOptions kGreedy{.temperature = 0};

fs::path residual_mlp_pack() {
  static const fs::path dir = test::with_candidate(test::lfm2_test_pack("tiny"),
                                                   fs::temp_directory_path() / "ember_decode_status" / std::to_string(getpid()),
                                                   {{"residualMlpWorkgroups", 1}});
  return dir;
}

// Runs `fn`, which must throw an ember::Error whose message holds `kernel`.
template <typename Fn>
void expect_give_up(Fn fn, const std::string& kernel, const std::string& caller) {
  try {
    fn();
    ADD_FAILURE() << caller << ": no error, although a wait of " << kernel << " gave up";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(kernel), std::string::npos) << caller << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("gave up"), std::string::npos) << caller << ": " << e.what();
    EXPECT_FALSE(e.fix().empty()) << caller << ": says nothing of what to do";
  }
}

struct StalledModel {
  formats::LlmPack pack = formats::LlmPack::open(residual_mlp_pack());
  llm::Lfm2Model model{test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true}};
  StalledModel() {
    EXPECT_TRUE(model.residual_mlp()) << (model.choices().warnings.empty() ? "" : model.choices().warnings.back());
    model.stall_for_tests(true);
  }
};

}  // namespace

// The ring hands a slot's payload out only with its status words clear; a set word throws its
// error instead, and the slot is free again. Words of a submit no ring read are owed to the
// device, whose next check reads them (once).
TEST(ReadbackRing, ChecksTheStatusWordsOfItsSubmit) {
  auto& dev = test::test_device();
  gpu::Buffer words = dev.create_storage(512, "status words");
  gpu::Buffer payload = dev.create_storage(16, "payload");
  dev.upload(payload, std::span<const uint32_t>(std::vector<uint32_t>{7, 8, 9, 10}));
  const gpu::StatusWord a{&words, 256, "kernel A gave up", "do A"}, b{&words, 4, "kernel B gave up", "do B"};
  gpu::ReadbackRing ring(dev, 12, 2, "test.readback");
  auto submit = [&](uint32_t slot) {
    gpu::Recorder rec(dev);
    rec.copy(payload, 4, ring.buffer(slot), 0, 12);
    rec.watch(a);
    rec.watch(b);
    rec.watch(a);  // once
    ring.submit(rec, slot);
  };
  submit(0);
  submit(1);
  const auto got = ring.read(1, "test");
  std::vector<uint32_t> ids(3);
  std::memcpy(ids.data(), got.data(), 12);
  EXPECT_EQ(ids, (std::vector<uint32_t>{8, 9, 10}));
  ring.release(1);
  ring.read(0, "test");
  ring.release(0);

  const uint32_t one = 1;
  dev.upload(words, std::span<const uint32_t>(&one, 1), 4);
  submit(0);
  try {
    ring.read(0, "the caller");
    ADD_FAILURE() << "a set status word went unreported";
  } catch (const Error& e) {
    EXPECT_EQ(e.problem(), "kernel B gave up");
    EXPECT_EQ(e.where(), "the caller");
    EXPECT_EQ(e.fix(), "do B");
  }
  submit(0);  // the failed read released the slot
  EXPECT_THROW(ring.read(0, "again"), Error);

  // Without a ring: the device's next check reports it, and only once.
  gpu::Recorder rec(dev);
  rec.watch(b);
  rec.submit();
  EXPECT_THROW(dev.wait_idle("test"), Error);
  EXPECT_NO_THROW(dev.check("test"));
  rec.watch(b);
  rec.submit();
  EXPECT_THROW(dev.download_as<uint32_t>(payload), Error);
  // An owed word outlives the buffer's owner (the device holds a reference, wgpuBufferAddRef).
  {
    gpu::Buffer gone = dev.create_storage(16, "short-lived status word");
    dev.upload(gone, std::span<const uint32_t>(&one, 1), 8);
    gpu::Recorder r2(dev);
    r2.watch({&gone, 8, "kernel C gave up", "do C"});
    r2.submit();
  }
  try {
    dev.check("after the owner");
    ADD_FAILURE() << "the owed word of a released buffer went unreported";
  } catch (const Error& e) {
    EXPECT_EQ(e.problem(), "kernel C gave up");
  }
}

// The probe at load and ordinary decoding leave the status word clear; the stall word makes the
// next decode step's waits give up, which residual_mlp_failed then reports.
TEST(DecodeStatus, StallMakesTheResidualMlpGiveUp) {
  auto pack = formats::LlmPack::open(residual_mlp_pack());
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true});
  ASSERT_TRUE(model.residual_mlp());
  const std::vector<uint32_t> ids = {1, 5, 9};
  EXPECT_NO_THROW(llm::compute_logits(model, ids, {.decode = true}, [](uint32_t, std::span<const float>) {}));
  EXPECT_FALSE(model.residual_mlp_failed());
  model.stall_for_tests(true);
  model.prefill(ids);
  EXPECT_FALSE(model.residual_mlp_failed());  // prefill does not run it
  gpu::Recorder rec(test::test_device());
  model.record_decode(rec);
  rec.submit();
  EXPECT_THROW(test::test_device().check("decode"), Error);  // the submit's word was owed to the device
  EXPECT_TRUE(model.residual_mlp_failed());
}

TEST(DecodeStatus, GenerateReportsAResidualMlpGiveUp) {
  StalledModel s;
  llm::Generator gen(s.model);
  std::vector<uint32_t> tokens;
  expect_give_up([&] { gen.generate(std::vector<uint32_t>{1, 5, 9}, kGreedy, {.max_tokens = 6}, [&](uint32_t id) {
                       tokens.push_back(id);
                       return true;
                     }); },
                 "residual_mlp_q4", "generate");
  // The first id comes from the prefill's logits (no residual MLP); none after it.
  EXPECT_LE(tokens.size(), 1u);
  // The generator goes on failing (the word is sticky), rather than handing out tokens.
  s.model.reset();
  expect_give_up([&] { gen.generate(std::vector<uint32_t>{2}, kGreedy, {.max_tokens = 3, .in_flight = 1}, [](uint32_t) { return true; }); },
                 "residual_mlp_q4", "generate, again");
}

TEST(DecodeStatus, LogitsDecodeReportsAResidualMlpGiveUp) {
  StalledModel s;
  const std::vector<uint32_t> ids = {1, 5, 9, 4};
  for (bool all : {true, false}) {
    size_t rows = 0;
    expect_give_up([&] { llm::compute_logits(s.model, ids, {.all_positions = all, .decode = true}, [&](uint32_t, std::span<const float>) { rows++; }); },
                   "residual_mlp_q4", all ? "logits --decode" : "logits --decode --positions last");
    EXPECT_EQ(rows, 0u);
  }
  // The prefill path runs no such kernel.
  EXPECT_NO_THROW(llm::compute_logits(s.model, ids, {.decode = false}, [](uint32_t, std::span<const float>) {}));
}

TEST(DecodeStatus, BenchLlmReportsAResidualMlpGiveUp) {
  StalledModel s;
  llm::Generator gen(s.model);
  auto ceilings = tune::measure_ceilings(s.model.device(), s.model.kernels(), {.max_bytes = 1 << 20, .repeats = 1, .stage_groups = 1});
  tune::LlmBenchOptions o;
  o.prompt = 8;
  o.gen = 4;
  o.contexts = {8};
  o.repeats = 1;
  expect_give_up([&] { tune::bench_llm(s.model, gen, ceilings, o); }, "residual_mlp_q4", "bench llm");
}

// What ember tune compares whole candidates by: decode steps timed without reading results back.
TEST(DecodeStatus, TuneDecodeTimingReportsAResidualMlpGiveUp) {
  StalledModel s;
  const std::vector<uint32_t> context = {1, 5, 9}, next = {4, 2};
  expect_give_up([&] { tune::decode_step_gpu_us(s.model, context, next); }, "residual_mlp_q4", "tune's decode steps");
}

TEST(DecodeStatus, GenerateReportsAGreedySamplerGiveUp) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 8, .quiet = true});
  llm::Generator gen(model);
  ASSERT_TRUE(gen.sampler_config().one_dispatch_greedy);
  std::vector<uint32_t> tokens;
  auto run = [&] {
    gen.reset();
    tokens.clear();
    gen.generate(std::vector<uint32_t>{1, 5, 9}, kGreedy, {.max_tokens = 5}, [&](uint32_t id) {
      tokens.push_back(id);
      return true;
    });
  };
  gen.sampler().stall_for_tests(true);
  expect_give_up(run, "sampler_greedy", "generate");
  EXPECT_TRUE(tokens.empty());
  gen.sampler().stall_for_tests(false);
  EXPECT_TRUE(gen.sampler().gave_up());  // sticky: this sampler's picks are not trusted again
  expect_give_up(run, "sampler_greedy", "generate after the stall");
  // A fresh generator on the same model decodes normally.
  llm::Generator fresh(model);
  gen.reset();
  EXPECT_NO_THROW(fresh.generate(std::vector<uint32_t>{1, 5, 9}, kGreedy, {.max_tokens = 5}, [](uint32_t) { return true; }));
}

// The server's scheduler fails the request (its error names the kernel) instead of streaming the
// tokens, for a give-up of the model's decode step, not only of its sampler.
TEST(DecodeStatus, SchedulerReportsAResidualMlpGiveUp) {
  llm::Session session(residual_mlp_pack(), {.model = {.quiet = true}});
  ASSERT_TRUE(session.model().residual_mlp());
  session.model().stall_for_tests(true);
  const uint32_t parallel = std::max<uint32_t>(1, static_cast<uint32_t>(session.pack().runtime().max_queries));
  server::Scheduler scheduler(session, {.parallel = parallel, .queue = 2});
  auto job = scheduler.submit({.prompt = {1, 5, 9}, .sampling = kGreedy, .max_tokens = 6});
  server::Job::Update u;
  std::string text;
  for (int i = 0; i < 600 && !u.done; i++) {
    u = job->wait(std::chrono::milliseconds(100));
    text += u.text;
  }
  ASSERT_TRUE(u.done);
  EXPECT_EQ(u.finish, server::Finish::Error);
  EXPECT_NE(u.error.find("residual_mlp_q4"), std::string::npos) << u.error;
  EXPECT_LE(u.completion_tokens, 1u);  // at most the id sampled from the prefill's logits
  scheduler.shutdown(std::chrono::milliseconds(0));
}
