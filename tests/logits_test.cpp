// `ember logits` and `ember generate --dump-logits` (issue 8, "numbers you can check from
// outside"): the logits of every position against the CPU reference, prefill and decode paths
// against each other, the dump against `ember logits` on the same ids, the .npy files against
// the format specification and numpy itself, and the errors for bad input.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/lfm2_model.h"
#include "llm/logits.h"
#include "tokenizer/tokenizer.h"
#include "numpy_util.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

constexpr double kLogitTolerance = 1e-3;       // issue 8: GPU vs reference logits, rel L2 per position
constexpr double kPathAgreement = 1e-4;        // prefill vs decode kernels on the same ids
const char* kPrompt = "Hello there, how are you today? Fine, thanks.";

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_logits_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Row r of a [rows, vocab] f32 .npy.
std::vector<float> row(const formats::NpyArray& a, int64_t r) {
  auto all = a.to_f32();
  const int64_t V = a.shape.at(1);
  return std::vector<float>(all.begin() + r * V, all.begin() + (r + 1) * V);
}

std::string ids_text(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(id);
  }
  return s;
}

uint32_t argmax(std::span<const float> v) { return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

class LogitsCli : public ::testing::Test {
 protected:
  static fs::path pack() { return test::lfm2_test_pack("tiny"); }
  static llm::Tokenizer tokenizer() { return llm::Tokenizer::from_file((pack() / "tokenizer.json").string()); }
  static test::CliResult logits(const std::string& args) { return test::run_ember("logits --quiet --model " + pack().string() + " " + args); }
};

}  // namespace

// The model method behind `ember logits`, in process: every position of a prompt that spans
// several chunks (the last one partial) against the reference.
TEST(Lfm2Logits, PrefillLogitsOfEveryPositionMatchTheReference) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  llm::Lfm2Model model(test::test_device(), test::test_kernels(), pack, {.prefill_chunk = 6, .quiet = true});
  auto weights = test::reference_weights(pack, model.choices().down_copy());
  reference::Lfm2Reference ref(weights);
  std::mt19937 rng(21);
  std::vector<uint32_t> ids(17);
  for (auto& id : ids) id = rng() % model.vocab();
  std::vector<std::vector<float>> want;
  for (uint32_t id : ids) want.push_back(ref.step(id));
  // Whole chunks per read-back, then at most 4 rows per read-back (chunks split in parts).
  for (auto [max_rows, blocks] : {std::pair{0u, std::vector<uint32_t>{0, 6, 12}}, std::pair{4u, std::vector<uint32_t>{0, 4, 6, 10, 12, 16}}}) {
    model.reset();
    std::vector<std::vector<float>> got;
    std::vector<uint32_t> firsts;
    model.prefill_logits(ids, [&](uint32_t first, std::span<const float> rows) {
      firsts.push_back(first);
      for (size_t r = 0; r < rows.size() / model.vocab(); r++)
        got.emplace_back(rows.begin() + r * model.vocab(), rows.begin() + (r + 1) * model.vocab());
    }, max_rows);
    EXPECT_EQ(firsts, blocks) << "max_rows " << max_rows;
    ASSERT_EQ(got.size(), ids.size());
    for (size_t p = 0; p < ids.size(); p++) EXPECT_LT(test::rel_l2(got[p], want[p]), kLogitTolerance) << "position " << p;
    EXPECT_EQ(model.position(), ids.size());
    // The last row is also what prefill leaves for the sampler.
    EXPECT_EQ(model.device().download_as<float>(model.logits()), got.back());
  }
}

TEST_F(LogitsCli, PromptLogitsEqualTheReferenceOnBothPathsAndTheyAgree) {
  fs::path dir = temp_dir("reference");
  // The test tokenizer's post-processor adds nothing, so --bos puts <|startoftext|> first.
  auto tok = tokenizer();
  ASSERT_TRUE(tok.special_prefix().empty());
  auto ids = tok.encode(kPrompt);
  ids.insert(ids.begin(), *tok.token_to_id("<|startoftext|>"));
  ASSERT_GT(ids.size(), 10u);
  auto pre = logits("--prompt '" + std::string(kPrompt) + "' --bos --chunk 4 --out " + (dir / "prefill.npy").string());
  ASSERT_EQ(pre.status, 0) << pre.out;
  auto dec = logits("--prompt '" + std::string(kPrompt) + "' --bos --decode --out " + (dir / "decode.npy").string());
  ASSERT_EQ(dec.status, 0) << dec.out;
  auto a = formats::read_npy(dir / "prefill.npy"), b = formats::read_npy(dir / "decode.npy");
  auto lp = formats::LlmPack::open(pack());
  ASSERT_EQ(a.shape, (std::vector<int64_t>{static_cast<int64_t>(ids.size()), lp.shape().vocab}));
  ASSERT_EQ(b.shape, a.shape);
  auto weights = test::reference_weights(lp, lp.candidate().down_copy());
  reference::Lfm2Reference ref(weights);
  for (size_t p = 0; p < ids.size(); p++) {
    auto want = ref.step(ids[p]);
    EXPECT_LT(test::rel_l2(row(a, p), want), kLogitTolerance) << "prefill, position " << p;
    EXPECT_LT(test::rel_l2(row(b, p), want), kLogitTolerance) << "decode, position " << p;
    EXPECT_LT(test::rel_l2(row(a, p), row(b, p)), kPathAgreement) << "prefill vs decode, position " << p;
  }
  // Without --bos the ids are the text's alone; --positions last is the last row of all.
  auto last = logits("--prompt '" + std::string(kPrompt) + "' --positions last --out " + (dir / "last.npy").string());
  ASSERT_EQ(last.status, 0) << last.out;
  auto all = logits("--tokens " + ids_text(std::vector<uint32_t>(ids.begin() + 1, ids.end())) + " --out " + (dir / "all.npy").string());
  ASSERT_EQ(all.status, 0) << all.out;
  auto l = formats::read_npy(dir / "last.npy"), t = formats::read_npy(dir / "all.npy");
  ASSERT_EQ(l.shape, (std::vector<int64_t>{1, lp.shape().vocab}));
  ASSERT_EQ(t.shape[0], static_cast<int64_t>(ids.size() - 1));
  EXPECT_EQ(row(l, 0), row(t, t.shape[0] - 1));
  fs::remove_all(dir);
}

TEST_F(LogitsCli, GenerateDumpEqualsLogitsOfTheSameIds) {
  fs::path dir = temp_dir("dump");
  const int n = 6;
  auto gen = test::run_ember("generate --quiet --json --temperature 0 -n " + std::to_string(n) + " --model " + pack().string() +
                             " --prompt '" + kPrompt + "' --dump-logits " + (dir / "dump.npy").string());
  ASSERT_EQ(gen.status, 0) << gen.out;
  auto j = nlohmann::json::parse(gen.out);
  auto generated = j["ids"].get<std::vector<uint32_t>>();
  ASSERT_EQ(generated.size(), size_t(n));
  auto dump = formats::read_npy(dir / "dump.npy");
  auto lp = formats::LlmPack::open(pack());
  ASSERT_EQ(dump.shape, (std::vector<int64_t>{n, lp.shape().vocab}));

  // generate encodes with the post-processor's special tokens (no --raw); step i's logits are those of position P + i - 1.
  auto tok = tokenizer();
  auto ids = tok.encode(kPrompt, true);
  const size_t P = ids.size();
  ids.insert(ids.end(), generated.begin(), generated.end() - 1);
  for (const char* path : {"", "--decode"}) {
    fs::remove(dir / "logits.npy");  // an existing .npy is never replaced
    auto r = logits("--tokens " + ids_text(ids) + " " + path + " --out " + (dir / "logits.npy").string());
    ASSERT_EQ(r.status, 0) << r.out;
    auto all = formats::read_npy(dir / "logits.npy");
    ASSERT_EQ(all.shape[0], static_cast<int64_t>(ids.size()));
    for (int i = 0; i < n; i++) {
      auto d = row(dump, i);
      EXPECT_LT(test::rel_l2(d, row(all, P - 1 + i)), kPathAgreement) << path << " step " << i;
      // Greedy: the dumped row is what the sampler picked from (over the tokenizer's ids).
      EXPECT_EQ(argmax(std::span<const float>(d).first(tok.vocab_size())), generated[i]) << "step " << i;
    }
  }
  fs::remove_all(dir);
}

TEST_F(LogitsCli, DumpWithSamplingHasOneRowPerGeneratedToken) {
  fs::path dir = temp_dir("dump_sampled");
  auto gen = test::run_ember("generate --quiet --json --temperature 0.8 --top-k 20 --seed 3 -n 9 --model " + pack().string() +
                             " --prompt 'Hi' --dump-logits " + (dir / "dump.npy").string());
  ASSERT_EQ(gen.status, 0) << gen.out;
  auto j = nlohmann::json::parse(gen.out);
  auto dump = formats::read_npy(dir / "dump.npy");
  EXPECT_EQ(dump.shape[0], j["generated_tokens"].get<int64_t>());
  // Without --dump-logits nothing is written.
  auto plain = test::run_ember("generate --quiet --temperature 0 -n 3 --model " + pack().string() + " --prompt 'Hi'");
  ASSERT_EQ(plain.status, 0) << plain.out;
  fs::remove_all(dir);
}

TEST_F(LogitsCli, TokenFilesOfEveryIntegerTypeGiveTheSameLogits) {
  fs::path dir = temp_dir("files");
  std::vector<uint32_t> ids{1, 17, 200, 33, 4, 99, 0, 511};
  ASSERT_EQ(logits("--tokens '" + ids_text(ids) + "' --out " + (dir / "list.npy").string()).status, 0);
  const std::string want = ember::read_file(dir / "list.npy");
  std::vector<int64_t> shape{static_cast<int64_t>(ids.size())};
  std::vector<int32_t> i32(ids.begin(), ids.end());
  std::vector<int64_t> i64(ids.begin(), ids.end());
  auto bytes = [](const auto& v) { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(v[0])); };
  formats::write_npy(dir / "i32.npy", formats::NpyDType::I32, shape, bytes(i32));
  formats::write_npy(dir / "i64.npy", formats::NpyDType::I64, shape, bytes(i64));
  formats::write_npy(dir / "u32.npy", formats::NpyDType::U32, shape, bytes(ids));
  for (const char* f : {"i32", "i64", "u32"}) {
    fs::remove(dir / "file.npy");  // an existing .npy is never replaced
    auto r = logits("--tokens-file " + (dir / (std::string(f) + ".npy")).string() + " --out " + (dir / "file.npy").string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(ember::read_file(dir / "file.npy"), want) << f;
  }
  fs::remove_all(dir);
}

// Acceptance 3: np.load reads what ember writes, with the documented shapes and dtypes, and the
// bytes follow the .npy 1.0 specification.
TEST_F(LogitsCli, NumpyLoadsTheLogitsAndTheDump) {
  fs::path dir = temp_dir("numpy");
  ASSERT_EQ(logits("--tokens 5,6,7,8,9 --out " + (dir / "l.npy").string()).status, 0);
  auto gen = test::run_ember("generate --quiet --temperature 0 -n 4 --model " + pack().string() + " --prompt Hi --dump-logits " +
                             (dir / "d.npy").string());
  ASSERT_EQ(gen.status, 0) << gen.out;
  // Header bytes: magic, version 1.0, little-endian u16 length, the dict, space padding to a
  // 64-byte boundary, '\n'; then exactly rows x vocab x 4 bytes.
  const std::string file = ember::read_file(dir / "l.npy");
  ASSERT_GT(file.size(), 10u);
  EXPECT_EQ(file.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(file[6], 1);
  EXPECT_EQ(file[7], 0);
  const size_t len = static_cast<uint8_t>(file[8]) | (size_t{static_cast<uint8_t>(file[9])} << 8);
  EXPECT_EQ((10 + len) % 64, 0u);
  const std::string dict = file.substr(10, len);
  EXPECT_EQ(dict.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (5, 512), }", 0), 0u) << dict;
  EXPECT_EQ(dict.back(), '\n');
  EXPECT_EQ(dict.find_first_not_of(' ', dict.find('}') + 1), len - 1) << "padding is spaces";
  EXPECT_EQ(file.size(), 10 + len + 5 * 512 * 4);

  std::string python = test::numpy_python();
  if (python.empty()) GTEST_SKIP() << "python3 with numpy not installed (scripts/setup.sh installs python3-numpy)";
  for (auto [f, want] : {std::pair{"l.npy", "(5, 512) float32"}, std::pair{"d.npy", "(4, 512) float32"}})
    EXPECT_EQ(test::python_output(python, "import numpy as np; a=np.load('" + (dir / f).string() + "'); print(a.shape, a.dtype)"), want);
  // And numpy's values are ours.
  auto ours = formats::read_npy(dir / "l.npy").to_f32();
  char expect[64];
  std::snprintf(expect, sizeof expect, "%.9g", static_cast<double>(ours[3 * 512 + 17]));
  EXPECT_EQ(test::python_output(python, "import numpy as np; a=np.load('" + (dir / "l.npy").string() + "'); print('%.9g' % a[3, 17])"),
            expect);
  fs::remove_all(dir);
}

TEST_F(LogitsCli, BadInputIsAClearErrorAndLeavesNoOutput) {
  fs::path dir = temp_dir("errors");
  const fs::path out = dir / "out.npy", existing = dir / "existing.npy";
  ember::write_file_atomic(existing, std::string("previous"));
  auto expect_error = [&](const std::string& args, const std::string& part) {
    auto r = logits(args + " --out " + out.string());
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.out.find(part), std::string::npos) << args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(out)) << "a failed run leaves no output: " << args;
  };
  // An existing output is refused before any work, and left as it was.
  auto r = logits("--tokens 1,2 --out " + existing.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("exists"), std::string::npos) << r.out;
  EXPECT_EQ(ember::read_file(existing), "previous");
  expect_error("--tokens 1,2,512", "outside the vocabulary");
  expect_error("--tokens 1,x,3", "'x' (item 2) is not a token id");
  expect_error("--tokens 1,-2", "is not a token id");
  expect_error("--tokens ''", "no token ids");
  expect_error("--prompt ''", "no token ids");
  expect_error("", "give --tokens");
  expect_error("--tokens 1 --prompt hi", "excludes");
  auto lp = formats::LlmPack::open(pack());
  std::vector<uint32_t> many(static_cast<size_t>(lp.runtime().max_total_positions) + 1, 3);
  expect_error("--tokens " + ids_text(many), "context");

  std::vector<int64_t> one{2}, two{1, 2};
  formats::write_npy_f32(dir / "floats.npy", one, std::vector<float>{1, 2});
  expect_error("--tokens-file " + (dir / "floats.npy").string(), "integers are expected");
  std::vector<int32_t> pair{1, 2};
  auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pair.data()), 8);
  formats::write_npy(dir / "2d.npy", formats::NpyDType::I32, two, bytes);
  expect_error("--tokens-file " + (dir / "2d.npy").string(), "1-D");
  std::vector<int32_t> neg{1, -4};
  formats::write_npy(dir / "neg.npy", formats::NpyDType::I32, one, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(neg.data()), 8));
  expect_error("--tokens-file " + (dir / "neg.npy").string(), "index 1 is outside the vocabulary");
  ember::write_file_atomic(dir / "garbage.npy", std::string("not numpy at all"));
  expect_error("--tokens-file " + (dir / "garbage.npy").string(), "not a .npy file");
  expect_error("--tokens-file " + (dir / "missing.npy").string(), "missing.npy");
  formats::write_npy(dir / "empty.npy", formats::NpyDType::I32, std::vector<int64_t>{0}, {});
  expect_error("--tokens-file " + (dir / "empty.npy").string(), "no token ids");

  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) files++;
  EXPECT_EQ(files, 6u) << "no temporary file left behind";
  fs::remove_all(dir);
}
