// Generation end to end: the GPU sampler inside the decode pipeline, continuation of a sequence
// (chat), and the `ember generate` command with its errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/npy.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/generator.h"
#include "llm/session.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

uint32_t argmax(const std::vector<float>& v) { return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

std::vector<uint32_t> generate(llm::Generator& g, std::span<const uint32_t> prompt, const llm::SamplingOptions& s, uint32_t n,
                               uint32_t in_flight, uint32_t per_submit = 1) {
  std::vector<uint32_t> out;
  g.generate(prompt, s, {.max_tokens = n, .in_flight = in_flight, .steps_per_submit = per_submit}, [&](uint32_t id) {
    out.push_back(id);
    return true;
  });
  return out;
}

const llm::SamplingOptions kGreedy{.temperature = 0};

}  // namespace

TEST(Generate, GreedyTokensEqualTheReference) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 16, .quiet = true});
  auto weights = test::reference_weights(pack, model.choices().down_copy());
  reference::Lfm2Reference ref(weights);
  std::vector<uint32_t> prompt = {1, 17, 200, 33, 4, 99};
  std::vector<float> logits;
  for (uint32_t id : prompt) logits = ref.step(id);
  std::vector<uint32_t> expect;
  for (int i = 0; i < 12; i++) {
    expect.push_back(argmax(logits));
    logits = ref.step(expect.back());
  }
  // Several steps per submit: each step's position and sampler parameters reach it through its
  // own ring slot (a shared slot would give every step of a submit the last one's position).
  // A fresh sequence of the model each time: no ids left in its token buffer by an earlier run.
  for (auto [depth, per_submit] : {std::pair{1u, 1u}, {4u, 1u}, {4u, 2u}, {8u, 4u}, {8u, 8u}}) {
    llm::Lfm2Model fresh(model, {.prefill_chunk = 16, .quiet = true});
    llm::Generator gen(fresh);
    gen.reset();
    EXPECT_EQ(generate(gen, prompt, kGreedy, 12, depth, per_submit), expect) << "in_flight " << depth << ", per submit " << per_submit;
  }
  // The generator's last pick already embedded the last id (where the device binds enough buffers
  // for an embedding pick): a decode recorded by itself afterwards starts from that and gives the
  // logits after the whole sequence.
  llm::Lfm2Model fresh(model, {.prefill_chunk = 16, .quiet = true});
  llm::Generator gen(fresh);
  gen.reset();
  ASSERT_EQ(generate(gen, prompt, kGreedy, 12, 1), expect);
  gpu::Recorder rec(test::test_device());
  fresh.record_decode(rec);
  rec.submit();
  EXPECT_LT(test::rel_l2(test::test_device().download_as<float>(fresh.logits()), logits), 1e-3);
  // lavapipe binds 10 storage buffers: the embedding pick and the one greedy dispatch both fit.
  EXPECT_TRUE(gen.sampler_config().one_dispatch_greedy);
  EXPECT_NE(gen.sampler_config().embed_rows, 0u);
}

// The pack's samplePartials sizes the sampler (at most one workgroup per 64 ids): an odd count
// splits the vocabulary unevenly and still gives the reference's tokens.
TEST(Generate, PacksSamplePartialsSizeTheSampler) {
  const fs::path dir = fs::temp_directory_path() / ("ember_partials_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(test::lfm2_test_pack("tiny"), dir, fs::copy_options::recursive);
  std::vector<uint32_t> expect;
  for (uint32_t partials : {256u, 3u}) {
    auto j = nlohmann::json::parse(ember::read_file(dir / "runtime.json"));
    j["runtime"]["samplePartials"] = partials;
    ember::write_file_atomic(dir / "runtime.json", j.dump(2));
    auto pack = formats::LlmPack::open(dir);
    llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
    llm::Generator gen(model);
    EXPECT_EQ(gen.sampler_config().partials, std::min(partials, model.vocab() / 64)) << partials;
    const auto ids = generate(gen, std::vector<uint32_t>{1, 17, 200, 33}, kGreedy, 8, 4, 2);
    if (expect.empty()) expect = ids;
    EXPECT_EQ(ids, expect) << partials;
  }
  fs::remove_all(dir);
}

// A stop inside a submit of several steps: the ids up to it are reported (read back together),
// the rest of the submit is discarded, and the sequence cannot be continued.
TEST(Generate, StopInsideASubmitReportsUpToItAndDiscardsTheRest) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  llm::Generator gen(model);
  const std::vector<uint32_t> prompt = {2, 40, 9};
  const auto all = generate(gen, prompt, kGreedy, 12, 8, 4);
  ASSERT_EQ(all.size(), 12u);
  gen.reset();
  std::vector<uint32_t> got;
  auto st = gen.generate(prompt, kGreedy, {.max_tokens = 12, .in_flight = 8, .steps_per_submit = 4}, [&](uint32_t id) {
    got.push_back(id);
    return got.size() < 5;  // submits of 1, 1, 2, then 4 steps: the first id of the fourth
  });
  EXPECT_EQ(got, std::vector<uint32_t>(all.begin(), all.begin() + 5));
  EXPECT_EQ(st.generated, 5u);
  EXPECT_TRUE(gen.pending().empty());
}

TEST(Generate, SameSeedSameTokens) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  llm::Generator gen(model);
  llm::SamplingOptions s{.temperature = 1.0f, .top_k = 20, .top_p = 0.9f, .min_p = 0.0f, .repeat_penalty = 1.1f, .seed = 42};
  std::vector<uint32_t> prompt = {5, 6, 7};
  gen.reset();
  auto a = generate(gen, prompt, s, 16, 4);
  gen.reset();
  auto b = generate(gen, prompt, s, 16, 2);
  EXPECT_EQ(a, b);
  gen.reset();
  EXPECT_EQ(generate(gen, prompt, s, 16, 8, 8), a);  // the RNG counter and penalty window per step
  s.seed = 43;
  gen.reset();
  EXPECT_NE(generate(gen, prompt, s, 16, 4), a);
}

// Past the parameter ring's end (Lfm2Model::kStepRing slots): a submit whose slots wrap around
// gets each step's own parameters (the sampled ids match one step a submit).
TEST(Generate, SubmitsAcrossTheParameterRingKeepEachStepsParameters) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  llm::Generator gen(model);
  const llm::SamplingOptions s{.temperature = 1.0f, .top_k = 20, .repeat_penalty = 1.1f, .seed = 7};
  const std::vector<uint32_t> prompt = {8, 9};
  const uint32_t n = llm::Lfm2Model::kStepRing + 16;
  ASSERT_GE(model.capacity(), prompt.size() + n);
  gen.reset();
  const auto one_by_one = generate(gen, prompt, s, n, 1);
  gen.reset();
  EXPECT_EQ(generate(gen, prompt, s, n, 48, 24), one_by_one);  // submits of 1, 1, 2, 4, 8, 16, 24, 24: steps 57-80 wrap at 64
  // Submits of the whole ring (1, 1, 2, 4, 8, 16, 32, 64, 16), 128 steps in flight.
  const uint32_t n2 = 2 * llm::Lfm2Model::kStepRing + 16;
  ASSERT_GE(model.capacity(), prompt.size() + n2);
  gen.reset();
  const auto longer = generate(gen, prompt, s, n2, 1);
  gen.reset();
  EXPECT_EQ(generate(gen, prompt, s, n2, 128, 64), longer);
}

TEST(Generate, ContinuationAfterAStopEqualsOneLongSequence) {
  // Turn 1 stops on a chosen id with in_flight 1; turn 2 continues from the caches. The result
  // must equal feeding everything as one sequence (what multi-turn chat relies on).
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.quiet = true});
  llm::Generator gen(model);
  std::vector<uint32_t> p1 = {3, 10, 20}, p2 = {4, 50};
  auto turn1 = generate(gen, p1, kGreedy, 5, 1);
  ASSERT_EQ(gen.pending(), std::vector<uint32_t>{turn1.back()});
  auto turn2 = generate(gen, p2, kGreedy, 6, 1);

  llm::Lfm2Model fresh(model, {.quiet = true});
  llm::Generator whole(fresh);
  std::vector<uint32_t> all = p1;
  all.insert(all.end(), turn1.begin(), turn1.end());
  all.insert(all.end(), p2.begin(), p2.end());
  EXPECT_EQ(generate(whole, all, kGreedy, 6, 4), turn2);
}

TEST(Generate, InvalidSamplingValuesAreClearErrors) {
  for (auto [field, s] : std::vector<std::pair<std::string, llm::SamplingOptions>>{
           {"temperature", {.temperature = -1}}, {"top-k", {.top_k = 1000}}, {"top-p", {.top_p = 0}},
           {"top-p", {.top_p = 1.5f}}, {"min-p", {.min_p = 1}}, {"repeat-penalty", {.repeat_penalty = 0}}}) {
    try {
      s.validate();
      FAIL() << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

class GenerateCli : public ::testing::Test {
 protected:
  static fs::path pack() { return test::lfm2_test_pack("tiny"); }
};

TEST_F(GenerateCli, JsonOutputAndStatistics) {
  auto r = test::run_ember("generate --model " + pack().string() + " --prompt 'Hello there' -n 8 --temperature 0 --json --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["generated_tokens"], 8);
  EXPECT_EQ(j["ids"].size(), 8u);
  EXPECT_GT(j["prompt_tokens"].get<int>(), 0);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0);
  EXPECT_EQ(j["down_copy"], "quant");
}

TEST_F(GenerateCli, StreamsAndReportsTimes) {
  auto r = test::run_ember("generate --model " + pack().string() + " --prompt 'Hi' -n 5 --temperature 0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("time to first token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tok/s"), std::string::npos) << r.out;
}

TEST_F(GenerateCli, BadInputIsAClearErrorAndNonZeroExit) {
  auto bad = test::run_ember("generate --model " + pack().string() + " --prompt x --top-p 2");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("--top-p"), std::string::npos) << bad.out;

  std::string long_prompt(3000, 'a');
  for (size_t i = 1; i < long_prompt.size(); i += 2) long_prompt[i] = ' ';
  auto too_long = test::run_ember("generate --model " + pack().string() + " --quiet --prompt '" + long_prompt + "'");
  EXPECT_NE(too_long.status, 0);
  EXPECT_NE(too_long.out.find("maxTotalPositions"), std::string::npos) << too_long.out;

  // A tokenizer with more tokens than the model's vocabulary.
  fs::path dir = fs::temp_directory_path() / ("ember_bigtok_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"weights.bin", "runtime.json"}) fs::create_symlink(fs::absolute(pack() / f), dir / f);
  fs::copy_file(fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/tokenizers/qwen3.json", dir / "tokenizer.json");
  auto big = test::run_ember("generate --model " + dir.string() + " --prompt x");
  EXPECT_NE(big.status, 0);
  EXPECT_NE(big.out.find("vocabulary"), std::string::npos) << big.out;
  fs::remove_all(dir);
}

TEST_F(GenerateCli, ChatKeepsHistoryAndResets) {
  auto r = test::run_ember("chat --model " + pack().string() + " --quiet --temperature 0 -n 4 <<'EOF'\nhello\nhow are you\n/reset\nhello\n/exit\nEOF");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("conversation cleared"), std::string::npos) << r.out;
  // The first reply after /reset equals the very first reply (same prompt, greedy).
  auto lines = [&] {
    std::vector<std::string> v;
    size_t a = 0;
    while (a < r.out.size()) {
      size_t b = r.out.find('\n', a);
      if (b == std::string::npos) b = r.out.size();
      v.push_back(r.out.substr(a, b - a));
      a = b + 1;
    }
    return v;
  }();
  std::vector<std::string> replies;
  for (const auto& l : lines)
    if (l.rfind("> ", 0) == 0 && l.size() > 2) replies.push_back(l.substr(2));
  ASSERT_GE(replies.size(), 3u) << r.out;
  EXPECT_EQ(replies[0], replies.back());
}

// --tokens-file: exactly the ids given (no template, no BOS), as transformers' generate takes
// input_ids: the greedy ids are the CPU reference's greedy continuation of those ids, and the same
// as the library's generator on them; the npy's integer types all work; bad files are errors.
TEST_F(GenerateCli, TokensFileGeneratesFromExactlyTheseIds) {
  fs::path dir = fs::temp_directory_path() / ("ember_generate_ids_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<uint32_t> ids = {1, 17, 200, 33, 4, 99};
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> i64(ids.begin(), ids.end());
  formats::write_npy(dir / "ids.npy", formats::NpyDType::I64, std::span<const int64_t>(&n, 1),
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(i64.data()), i64.size() * 8));
  formats::write_npy(dir / "ids_u32.npy", formats::NpyDType::U32, std::span<const int64_t>(&n, 1),
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4));
  auto r = test::run_ember("generate --model " + pack().string() + " --tokens-file " + (dir / "ids.npy").string() +
                           " -n 8 --temperature 0 --json --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"], ids.size());  // no BOS added
  const auto got = j["ids"].get<std::vector<uint32_t>>();

  // The reference's greedy continuation among the ids the tokenizer has (what ember samples from),
  // and the library's generator as the CLI's session makes it.
  llm::Session session(pack(), {.model = {.prefill_chunk = 16, .quiet = true}});
  const uint32_t sample_vocab = std::min<uint32_t>(static_cast<uint32_t>(session.tokenizer().vocab_size()), session.model().vocab());
  auto weights = test::reference_weights(session.pack(), session.model().choices().down_copy());
  reference::Lfm2Reference ref(weights);
  std::vector<float> logits;
  for (uint32_t id : ids) logits = ref.step(id);
  std::vector<uint32_t> want;
  for (size_t i = 0; i < got.size(); i++) {
    want.push_back(argmax(std::vector<float>(logits.begin(), logits.begin() + sample_vocab)));
    logits = ref.step(want.back());
  }
  EXPECT_EQ(got, want);
  std::vector<uint32_t> lib = generate(session.generator(), ids, kGreedy, static_cast<uint32_t>(got.size()), 4, 2);
  EXPECT_EQ(got, lib);

  auto r32 = test::run_ember("generate --model " + pack().string() + " --tokens-file " + (dir / "ids_u32.npy").string() +
                             " -n 8 --temperature 0 --json --quiet");
  ASSERT_EQ(r32.status, 0) << r32.out;
  EXPECT_EQ(nlohmann::json::parse(r32.out)["ids"].get<std::vector<uint32_t>>(), got);

  // Errors: an id outside the vocabulary, naming the file and the index; --prompt beside it; no input.
  const std::vector<int64_t> bad = {3, 100000};
  const int64_t two = 2;
  formats::write_npy(dir / "bad.npy", formats::NpyDType::I64, std::span<const int64_t>(&two, 1),
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bad.data()), bad.size() * 8));
  auto e = test::run_ember("generate --model " + pack().string() + " --tokens-file " + (dir / "bad.npy").string());
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.out.find("bad.npy"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("index 1"), std::string::npos) << e.out;
  auto both = test::run_ember("generate --model " + pack().string() + " --tokens-file " + (dir / "ids.npy").string() + " --prompt x");
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.out.find("--prompt"), std::string::npos) << both.out;
  auto none = test::run_ember("generate --model " + pack().string());
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.out.find("--tokens-file"), std::string::npos) << none.out;
  fs::remove_all(dir);
}
