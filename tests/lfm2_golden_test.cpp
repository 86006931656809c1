// The golden-directory harness of the upstream check (tools/golden/make_lfm2_goldens.py writes
// transformers' per-module outputs; ember_golden_check compares ember's with them). These tests
// are a SELF-CHECK OF THE HARNESS, not an upstream check: the golden directory here is written by
// ember's own CPU reference, so they show that the reader, the module names and the comparison
// work, and that a wrong weight makes the comparison fail; agreement with transformers is shown
// only by goldens that transformers wrote (tools/golden/device_check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/npy.h"
#include "gpu_fixture.h"
#include "lfm2_test_pack.h"
#include "llm/generator.h"
#include "llm/lfm2_model.h"
#include "llm/logits.h"
#include "reference/lfm2_golden.h"

using namespace ember;
namespace fs = std::filesystem;
using reference::GoldenDir;
using reference::GoldenModule;

namespace {

constexpr double kTolerance = 1e-3;  // tools/golden/README.md: per module and on the logits
const std::string kProducer = "ember CPU reference (self-check of the harness, not an upstream check)";

fs::path scratch(const std::string& name) { return fs::temp_directory_path() / ("ember_golden_" + std::to_string(getpid())) / name; }

std::vector<uint32_t> test_ids() {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 12; i++) ids.push_back((i * 97 + 13) % 512);
  return ids;
}

std::map<std::string, GoldenModule> modules_of(const GoldenDir& g) {
  std::map<std::string, GoldenModule> m;
  for (const auto& mod : g.modules) m.emplace(mod.name, mod);
  return m;
}

bool all_pass(const std::vector<reference::ModuleCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.passed(kTolerance); });
}

GoldenModule rows_of(const std::vector<std::vector<float>>& rows) {
  GoldenModule m{"gpu", static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.front().size()), {}};
  for (const auto& r : rows) m.values.insert(m.values.end(), r.begin(), r.end());
  return m;
}

// The logits of `ids` on the GPU, every position, through the prefill or the decode path.
GoldenModule gpu_logits(llm::Lfm2Model& model, const std::vector<uint32_t>& ids, bool decode) {
  std::vector<std::vector<float>> rows;
  llm::compute_logits(model, ids, {.all_positions = true, .decode = decode}, [&](uint32_t, std::span<const float> r) {
    for (size_t i = 0; i < r.size(); i += model.vocab()) rows.emplace_back(r.begin() + i, r.begin() + i + model.vocab());
  });
  return rows_of(rows);
}

}  // namespace

// Written and read back, the golden holds what the reference computed: every module the forward
// hooks of transformers would name, in order, each [positions, width].
TEST(Lfm2Golden, SelfCheckWrittenGoldenReadsBack) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  const auto weights = test::reference_weights(pack, "quant");
  const GoldenDir made = reference::reference_golden(weights, test_ids(), 6, kProducer);
  const fs::path dir = scratch("readback");
  fs::remove_all(dir.parent_path());
  reference::write_golden_dir(dir, made);
  const GoldenDir g = reference::read_golden_dir(dir);
  EXPECT_EQ(g.producer, kProducer);
  EXPECT_EQ(g.ids, test_ids());
  ASSERT_EQ(g.modules.size(), made.modules.size());
  const auto& s = pack.shape();
  // embed_tokens; per layer: operator_norm, the mixer (+ q/k layernorms), ffn_norm, feed_forward,
  // the layer; embedding_norm; lm_head.
  size_t expected = 3;
  for (auto t : s.layer_types) expected += t == formats::LayerType::Attention ? 7 : 5;
  EXPECT_EQ(g.modules.size(), expected);
  EXPECT_EQ(g.modules.front().name, "model.embed_tokens");
  EXPECT_EQ(g.modules.back().name, "lm_head");
  ASSERT_NE(g.find("model.layers.0.conv"), nullptr);
  ASSERT_NE(g.find("model.layers.1.self_attn"), nullptr);
  EXPECT_EQ(g.find("model.layers.1.self_attn.q_layernorm")->cols, s.heads * s.head_dim);
  EXPECT_EQ(g.find("lm_head")->cols, s.vocab);
  for (size_t i = 0; i < g.modules.size(); i++) {
    EXPECT_EQ(g.modules[i].name, made.modules[i].name);
    EXPECT_EQ(g.modules[i].rows, static_cast<int64_t>(test_ids().size()));
    EXPECT_EQ(g.modules[i].values, made.modules[i].values) << g.modules[i].name;
  }
  EXPECT_EQ(g.generate_ids, made.generate_ids);
  ASSERT_TRUE(g.generate_logits.has_value());
  EXPECT_EQ(g.generate_logits->rows, 6);
  EXPECT_TRUE(all_pass(reference::compare_modules(g, modules_of(made))));
  fs::remove_all(dir.parent_path());
}

// The comparison ember_golden_check makes: the CPU reference's modules and the GPU's logits
// (prefill, decode, greedy generation) against the golden pass; a deliberately wrong norm weight
// (layer 1's ffn_norm scaled by 1.05, as a mix-up of two norms would be) fails, from that module
// on, on the CPU and on the GPU.
TEST(Lfm2Golden, SelfCheckPassesAndAWrongNormWeightFails) {
  const fs::path tiny = test::lfm2_test_pack("tiny");
  auto pack = formats::LlmPack::open(tiny);
  const auto weights = test::reference_weights(pack, "quant");
  const std::vector<uint32_t> ids = test_ids();
  const GoldenDir golden = reference::reference_golden(weights, ids, 8, kProducer);

  // CPU: the reference again, and with the wrong norm.
  const auto same = reference::compare_modules(golden, modules_of(reference::reference_golden(weights, ids, 0, "again")));
  EXPECT_TRUE(all_pass(same)) << reference::check_table(same, kTolerance);
  auto wrong = weights;
  for (float& w : wrong.layers[1].ffn_norm) w *= 1.05f;
  const auto checks = reference::compare_modules(golden, modules_of(reference::reference_golden(wrong, ids, 0, "wrong")));
  const std::string table = reference::check_table(checks, kTolerance);
  for (const auto& c : checks) {
    const bool before = c.name == "model.embed_tokens" || c.name.rfind("model.layers.0", 0) == 0 || c.name == "model.layers.1.operator_norm" ||
                        c.name.rfind("model.layers.1.self_attn", 0) == 0 || c.name.rfind("model.layers.1.conv", 0) == 0;
    if (before) {
      EXPECT_TRUE(c.passed(kTolerance)) << c.name << "\n" << table;
    }
    if (c.name == "model.layers.1.ffn_norm" || c.name == "model.layers.1.feed_forward" || c.name == "lm_head") {
      EXPECT_FALSE(c.passed(kTolerance)) << c.name << "\n" << table;
    }
  }
  EXPECT_NE(table.find("FAIL"), std::string::npos);

  // GPU: logits of every position through the prefill and the decode path, and greedy generation.
  const GoldenModule& want = *golden.find("lm_head");
  auto gpu_checks = [&](const fs::path& pack_dir) {
    auto p = formats::LlmPack::open(pack_dir);
    llm::Lfm2Model model(test::test_device(), test::test_kernels(), p, {.prefill_chunk = 5, .quiet = true});
    std::vector<reference::ModuleCheck> out{reference::compare_rows("prefill", gpu_logits(model, ids, false), want),
                                            reference::compare_rows("decode", gpu_logits(model, ids, true), want)};
    llm::Generator gen(model);
    model.reset();
    std::vector<uint32_t> got;
    std::vector<std::vector<float>> logits;
    llm::GenerateOptions go{.max_tokens = 8};
    go.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
    gen.generate(ids, {.temperature = 0}, go, [&](uint32_t id) {
      got.push_back(id);
      return true;
    });
    reference::ModuleCheck ids_check{"generate ids", got == golden.generate_ids ? 0.0 : 1.0, 0, static_cast<int64_t>(got.size())};
    out.push_back(ids_check);
    out.push_back(reference::compare_rows("generate logits", rows_of(logits), *golden.generate_logits));
    return out;
  };
  const auto right = gpu_checks(tiny);
  EXPECT_TRUE(all_pass(right)) << reference::check_table(right, kTolerance);

  // The same pack with layer 1's ffn_norm section scaled in weights.bin.
  const fs::path bad = scratch("wrong_norm");
  fs::remove_all(bad);
  fs::create_directories(bad);
  for (const char* f : {"runtime.json", "tokenizer.json"}) fs::copy_file(tiny / f, bad / f);
  std::string bytes = read_file(tiny / "weights.bin");
  bool patched = false;
  for (const auto& s : pack.runtime().sections) {
    if (s.name != formats::layer_prefix(1) + "mlp.gate_up.norm") continue;
    for (uint64_t i = 0; i < s.bytes; i += 4) {
      float v;
      std::memcpy(&v, bytes.data() + s.offset + i, 4);
      v *= 1.05f;
      std::memcpy(bytes.data() + s.offset + i, &v, 4);
    }
    patched = true;
  }
  ASSERT_TRUE(patched);
  write_file_atomic(bad / "weights.bin", bytes);
  const auto broken = gpu_checks(bad);
  EXPECT_FALSE(broken[0].passed(kTolerance)) << reference::check_table(broken, kTolerance);
  EXPECT_FALSE(broken[1].passed(kTolerance)) << reference::check_table(broken, kTolerance);
  fs::remove_all(scratch(""));
}

// A directory that is not a complete golden is an error naming the file and what is wrong.
TEST(Lfm2Golden, ReaderRejectsIncompleteDirectories) {
  auto pack = formats::LlmPack::open(test::lfm2_test_pack("tiny"));
  const GoldenDir made = reference::reference_golden(test::reference_weights(pack, "quant"), {1, 2, 3}, 0, kProducer);
  const fs::path dir = scratch("bad");
  fs::remove_all(dir);
  reference::write_golden_dir(dir, made);
  auto error_of = [&] {
    try {
      reference::read_golden_dir(dir);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(reference::write_golden_dir(dir, made), Error);  // never over an existing directory
  const std::string index = read_file(dir / "index.json");
  auto with_index = [&](const std::string& text) { write_file_atomic(dir / "index.json", text); };
  with_index("{}");
  EXPECT_NE(error_of().find("not a golden index"), std::string::npos) << error_of();
  std::string escaped = index;
  escaped.replace(escaped.find("\"ids.npy\""), 9, "\"../ids.npy\"");
  with_index(escaped);
  EXPECT_NE(error_of().find("not a file of the directory"), std::string::npos) << error_of();
  with_index(index);
  fs::remove(dir / "lm_head.npy");
  EXPECT_NE(error_of().find("lm_head.npy"), std::string::npos) << error_of();
  const int64_t shape[2] = {2, 512};
  formats::write_npy_f32(dir / "lm_head.npy", shape, std::vector<float>(2 * 512));
  EXPECT_NE(error_of().find("has 2 rows for 3 ids"), std::string::npos) << error_of();
  fs::remove_all(scratch(""));
}
