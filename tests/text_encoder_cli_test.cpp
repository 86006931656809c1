// The text encoder commands end to end (`ember synth clip-text --shape tiny` -> `ember pack trellis
// --stage text-encoder` -> `ember encode-text`, `ember dequant`, `ember ss-flow --text-stage`)
// against the CPU reference; and bad input: a clear message, a non-zero exit, no output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"
#include "gpu_fixture.h"
#include "tokenizer/tokenizer.h"
#include "reference/clip_text_reference.h"
#include "trellis/text_encoder.h"

namespace fs = std::filesystem;
using namespace ember;
using test::run_ember;

namespace {

std::vector<float> load(const fs::path& p, std::vector<int64_t>* shape = nullptr) {
  formats::NpyArray a = formats::read_npy(p);
  if (shape) *shape = a.shape;
  return a.to_f32();
}

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }

class TextEncoderCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("ember_text_cli_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    auto r = run_ember("synth clip-text --shape tiny --seed 6 --out " + path("ckpt"));
    ASSERT_EQ(r.status, 0) << r.out;
    r = run_ember("pack trellis --quiet --stage text-encoder --from " + path("ckpt") + " --out " + path("stage"));
    ASSERT_EQ(r.status, 0) << r.out;
    auto pack = formats::StagePack::open(*dir_ / "stage");
    weights_ = new std::map<std::string, std::vector<float>>;
    for (const auto& [name, t] : pack.manifest().tensors) (*weights_)[name] = pack.dequantize(name);
    tokenizer_ = new llm::Tokenizer(llm::Tokenizer::from_file(path("ckpt/tokenizer.json")));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete weights_;
    delete tokenizer_;
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string stage() { return " --stage " + path("stage"); }
  static std::vector<float> reference(const std::vector<std::string>& prompts) {
    auto ids = trellis::clip_tokenize(*tokenizer_, prompts, 77);
    return reference::clip_text_forward(formats::clip_tiny_text_config(), *weights_, ids);
  }
  // A run that must fail with `needle` in its message and leave `out` unwritten.
  void expect_error(const std::string& args, const std::string& needle, const std::string& out = "out.npy") {
    fs::remove(path(out));
    auto r = run_ember(args);
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.out;
    EXPECT_FALSE(fs::exists(path(out))) << out << " was written";
  }
  static fs::path* dir_;
  static std::map<std::string, std::vector<float>>* weights_;
  static llm::Tokenizer* tokenizer_;
};

fs::path* TextEncoderCli::dir_ = nullptr;
std::map<std::string, std::vector<float>>* TextEncoderCli::weights_ = nullptr;
llm::Tokenizer* TextEncoderCli::tokenizer_ = nullptr;

}  // namespace

TEST_F(TextEncoderCli, PromptsMatchReference) {
  auto r = run_ember("encode-text" + stage() + " --prompt 'A cat on a TABLE!' --prompt '' --out " + path("two.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> shape;
  auto got = load(path("two.npy"), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 77, 128}));
  EXPECT_LT(test::rel_l2(got, reference({"A cat on a TABLE!", ""})), 1e-4);
  r = run_ember("encode-text" + stage() + " --prompt 'a cat' --out " + path("one.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  got = load(path("one.npy"), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{77, 128}));  // one prompt: the [77, 768]-style context ss-flow reads
  EXPECT_LT(test::rel_l2(got, reference({"a cat"})), 1e-4);
}

TEST_F(TextEncoderCli, TokensFileGivesWhatThePromptGives) {
  auto ids = trellis::clip_tokenize(*tokenizer_, {"a wooden chair"}, 77);
  std::vector<int64_t> i64(ids[0].begin(), ids[0].end());
  formats::write_npy(path("ids.npy"), formats::NpyDType::I64, std::vector<int64_t>{1, 77},
                     {reinterpret_cast<const uint8_t*>(i64.data()), i64.size() * 8});
  formats::write_npy(path("ids1.npy"), formats::NpyDType::I32, std::vector<int64_t>{77},
                     {reinterpret_cast<const uint8_t*>(ids[0].data()), ids[0].size() * 4});
  ASSERT_EQ(run_ember("encode-text" + stage() + " --prompt 'a wooden chair' --out " + path("p.npy")).status, 0);
  auto r = run_ember("encode-text" + stage() + " --tokens-file " + path("ids.npy") + " --out " + path("t.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> shape;
  auto t = load(path("t.npy"), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 77, 128}));
  EXPECT_EQ(t, load(path("p.npy")));
  ASSERT_EQ(run_ember("encode-text" + stage() + " --tokens-file " + path("ids1.npy") + " --out " + path("t1.npy")).status, 0);
  EXPECT_EQ(load(path("t1.npy"), &shape), t);
  EXPECT_EQ(shape, (std::vector<int64_t>{77, 128}));
}

TEST_F(TextEncoderCli, LongPromptIsTruncatedWithANote) {
  std::string text;
  for (int i = 0; i < 50; i++) text += "a red cat and ";
  auto r = run_ember("encode-text" + stage() + " --prompt " + shell_quoted(text) + " --print-ids --out " + path("long.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("note: prompt 1 is longer than 77 tokens and was truncated"), std::string::npos) << r.out;
  EXPECT_LT(test::rel_l2(load(path("long.npy")), reference({text})), 1e-4);
}

TEST_F(TextEncoderCli, BadIdsAreClearErrors) {
  auto write_ids = [&](const std::string& name, std::vector<int64_t> shape, int64_t value, formats::NpyDType dt = formats::NpyDType::I64) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    if (dt == formats::NpyDType::F32) {
      formats::write_npy_f32(path(name), shape, std::vector<float>(size_t(n), 1.0f));
      return;
    }
    std::vector<int64_t> v(size_t(n), value);
    formats::write_npy(path(name), formats::NpyDType::I64, shape, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 8});
  };
  write_ids("short.npy", {2, 50}, 5);
  expect_error("encode-text" + stage() + " --tokens-file " + path("short.npy") + " --out " + path("out.npy"),
               "rows of 50 ids, the text encoder takes exactly 77");
  write_ids("rank3.npy", {1, 1, 77}, 5);
  expect_error("encode-text" + stage() + " --tokens-file " + path("rank3.npy") + " --out " + path("out.npy"), "shape [N, L] or [L]");
  write_ids("float.npy", {1, 77}, 0, formats::NpyDType::F32);
  expect_error("encode-text" + stage() + " --tokens-file " + path("float.npy") + " --out " + path("out.npy"), "must be integers");
  write_ids("big.npy", {1, 77}, 5000);
  expect_error("encode-text" + stage() + " --tokens-file " + path("big.npy") + " --out " + path("out.npy"), "outside the vocabulary of 1000");
  expect_error("encode-text" + stage() + " --out " + path("out.npy"), "give --prompt TEXT");
  expect_error("encode-text --stage " + path("ckpt") + " --prompt x --out " + path("out.npy"), "no manifest.json");
}

TEST_F(TextEncoderCli, PackWithoutTokenizerFailsAndWritesNothing) {
  fs::copy(path("ckpt"), path("ckpt_notok"));
  fs::remove(path("ckpt_notok/tokenizer.json"));
  auto r = run_ember("pack trellis --quiet --stage text-encoder --from " + path("ckpt_notok") + " --out " + path("stage_notok"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no tokenizer.json"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("stage_notok")));
}

TEST_F(TextEncoderCli, DequantWritesTheWeightsAndConfig) {
  auto r = run_ember("dequant" + stage() + " --out " + path("deq.safetensors"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto st = formats::SafetensorsFile::open(path("deq.safetensors"));
  EXPECT_EQ(st.metadata().at("stage"), "textEncoder");
  auto config = formats::parse_clip_text_config(nlohmann::json::parse(st.metadata().at("config")), "metadata");
  EXPECT_EQ(config.hidden_size, 128);
  EXPECT_EQ(st.tensors().size(), weights_->size());
  for (const auto& [name, w] : *weights_) EXPECT_EQ(st.to_f32(name), w) << name;
}

TEST_F(TextEncoderCli, SsFlowFromPromptsEqualsSsFlowFromContexts) {
  // A tiny ss-flow stage whose context width is the tiny text encoder's.
  formats::SsFlowConfig c = formats::ss_flow_tiny_config();
  c.cond_channels = 128;
  write_file_atomic(path("ssf.json"), c.to_json().dump());
  ASSERT_EQ(run_ember("synth trellis-ss-flow --config " + path("ssf.json") + " --seed 3 --out " + path("ssf.safetensors")).status, 0);
  ASSERT_EQ(run_ember("pack trellis --quiet --stage ss-flow --from " + path("ssf.safetensors") + " --out " + path("ssf")).status, 0);
  ASSERT_EQ(run_ember("encode-text" + stage() + " --prompt 'a red chair' --out " + path("cond.npy")).status, 0);
  ASSERT_EQ(run_ember("encode-text" + stage() + " --prompt '' --out " + path("neg.npy")).status, 0);
  const std::string common = "ss-flow --stage " + path("ssf") + " --steps 3 --seed 2";
  auto r = run_ember(common + " --cond " + path("cond.npy") + " --neg-cond " + path("neg.npy") + " --out " + path("a.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_ember(common + " --text-stage " + path("stage") + " --prompt 'a red chair' --out " + path("b.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_LT(test::rel_l2(load(path("b.npy")), load(path("a.npy"))), 1e-6);
  // The negative prompt is the unconditional context: another one changes the latent.
  r = run_ember(common + " --text-stage " + path("stage") + " --prompt 'a red chair' --negative-prompt 'a dog' --out " + path("c.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GT(test::rel_l2(load(path("c.npy")), load(path("a.npy"))), 1e-4);
  expect_error(common + " --text-stage " + path("stage") + " --out " + path("out.npy"), "--text-stage needs --prompt");
  expect_error(common + " --out " + path("out.npy"), "give --cond and --neg-cond");
}

TEST_F(TextEncoderCli, SsFlowRefusesATextEncoderOfAnotherWidth) {
  ASSERT_EQ(run_ember("synth trellis-ss-flow --tiny --seed 3 --out " + path("ssf96.safetensors")).status, 0);
  ASSERT_EQ(run_ember("pack trellis --quiet --stage ss-flow --from " + path("ssf96.safetensors") + " --out " + path("ssf96")).status, 0);
  expect_error("ss-flow --stage " + path("ssf96") + " --steps 2 --text-stage " + path("stage") + " --prompt x --out " + path("out.npy"),
               "the text encoder makes [77, 128] contexts, the ss-flow stage takes [77, 96]");
}
