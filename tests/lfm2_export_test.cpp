// `ember dequant --model` (issue 8): a pack's weights back as a Hugging Face LFM2 checkpoint.
// Re-packed with `ember pack lfm2`, it gives a pack that dequantizes to exactly the same weights
// (quantizing dequantized values is exact); its config.json and tensor names are those of the
// checkpoints the packer reads.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/json_text.h"
#include "formats/lfm2_checkpoint.h"
#include "formats/llm_pack.h"
#include "formats/q4_quantize.h"
#include "formats/safetensors.h"
#include "lfm2_test_pack.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_export_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Counts the elements that differ between two float arrays (bitwise).
size_t differing(std::span<const float> a, std::span<const float> b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); i++) n += std::memcmp(&a[i], &b[i], 4) != 0;
  return n;
}

// dequant -> pack -> the new pack's weights, every one compared with the first pack's.
void check_round_trip(const fs::path& pack_dir, const fs::path& work, const std::string& down_copy) {
  auto r = test::run_ember("dequant --model " + pack_dir.string() + " --out " + (work / "hf").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("mlp.down." + down_copy), std::string::npos) << r.out;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"}) EXPECT_TRUE(fs::exists(work / "hf" / f)) << f;
  r = test::run_ember("pack lfm2 --from " + (work / "hf").string() + " --out " + (work / "repacked").string());
  ASSERT_EQ(r.status, 0) << r.out;
  auto a = formats::LlmPack::open(pack_dir), b = formats::LlmPack::open(work / "repacked");
  for (const auto& m : formats::llm_matrices(a.shape())) {
    auto wa = a.dequantize(m.name, down_copy), wb = b.dequantize(m.name, down_copy);
    EXPECT_EQ(differing(wa, wb), 0u) << m.name << " (down copy " << down_copy << ")";
  }
  for (const auto& s : a.layout().sections)
    if (s.kind == formats::SectionKind::F32) {
      EXPECT_TRUE(same_bits(a.f32_section(s.name), b.f32_section(s.name))) << s.name;
    }
  EXPECT_EQ(std::string(b.candidate().down_copy()), "quant") << "the packer writes the default candidate";
}

}  // namespace

TEST(Q4Quantize, QuantizingDequantizedValuesIsExact) {
  // Several value distributions, including blocks with a wide dynamic range and constant rows.
  for (uint32_t seed : {1u, 2u, 3u}) {
    const int64_t R = 96, C = 256;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(R * C));
    for (size_t i = 0; i < w.size(); i++)
      w[i] = seed == 1 ? normal(rng) : seed == 2 ? uniform(rng) : normal(rng) * std::exp(5.0f * uniform(rng));
    std::fill(w.begin(), w.begin() + C, 0.25f);
    auto sym = formats::quantize_q4_symmetric(w, R, C);
    auto d1 = formats::dequantize_q4_symmetric(sym.quant_bytes(), sym.scale_bytes(), R, C);
    auto sym2 = formats::quantize_q4_symmetric(d1, R, C);
    EXPECT_EQ(differing(formats::dequantize_q4_symmetric(sym2.quant_bytes(), sym2.scale_bytes(), R, C), d1), 0u) << "symmetric, seed " << seed;

    auto asym = formats::quantize_q4_asymmetric(w, R, C);
    auto a1 = formats::dequantize_q4_asymmetric(asym.quant_bytes(), asym.scale_bytes(), asym.zero_point_bytes(), R, C);
    auto asym2 = formats::quantize_q4_asymmetric(a1, R, C);
    EXPECT_EQ(differing(formats::dequantize_q4_asymmetric(asym2.quant_bytes(), asym2.scale_bytes(), asym2.zero_point_bytes(), R, C), a1), 0u)
        << "asymmetric, seed " << seed;

    auto k = formats::quantize_q4_kmajor(w, R, C);
    auto k1 = formats::dequantize_q4_kmajor(k.quant_bytes(), k.scale_bytes(), R, C);
    auto k2 = formats::quantize_q4_kmajor(k1, R, C);
    EXPECT_EQ(differing(formats::dequantize_q4_kmajor(k2.quant_bytes(), k2.scale_bytes(), R, C), k1), 0u) << "k-major, seed " << seed;
  }
}

TEST(Lfm2Export, RepackedCheckpointGivesTheSameWeights) {
  fs::path work = temp_dir("quant");
  check_round_trip(test::lfm2_test_pack("tiny"), work, "quant");
  fs::remove_all(work);
}

// With the fused MLP the k-major copy is the model's down weight: it is the one exported, and
// the re-packed kquant equals it (the re-packed down.quant is a fresh rounding along the other
// axis, so a run of the new pack needs mlpPair set again to use the same weights).
TEST(Lfm2Export, KMajorDownCopyRoundTripsWhenItIsTheModel) {
  fs::path work = temp_dir("kquant");
  fs::path pair = test::with_candidate(test::lfm2_test_pack("tiny"), work / "pack", {{"mlpPair", true}});
  check_round_trip(pair, work, "kquant");
  auto r = test::run_ember("dequant --model " + pair.string() + " --out " + (work / "hf2").string());
  EXPECT_NE(r.out.find("mlpPair"), std::string::npos) << "says how to run the same copy: " << r.out;
  fs::remove_all(work);
}

TEST(Lfm2Export, ConfigAndTensorsAreWhatTransformersReads) {
  fs::path work = temp_dir("config");
  fs::path pack_dir = test::lfm2_test_pack("tiny");
  fs::path original = pack_dir.parent_path() / "hf";  // the synthesized checkpoint the test pack came from
  auto r = test::run_ember("dequant --model " + pack_dir.string() + " --out " + (work / "hf").string());
  ASSERT_EQ(r.status, 0) << r.out;
  auto cfg_text = ember::read_file(work / "hf" / "config.json");
  auto j = formats::parse_json_text(cfg_text, "config.json");
  auto orig = formats::parse_json_text(ember::read_file(original / "config.json"), "original config.json");
  // The same keys as the checkpoints ember packs (block_ffn_dim_multiplier only matters with the
  // 2/3 rule, which the export turns off by giving the MLP width as is).
  for (const auto& [key, value] : orig.items())
    if (key != "block_ffn_dim_multiplier") {
      EXPECT_TRUE(j.contains(key)) << key;
    }
  EXPECT_EQ(j["block_auto_adjust_ff_dim"], false);
  auto c = formats::parse_lfm2_config(j, "config.json"), oc = formats::parse_lfm2_config(orig, "original");
  EXPECT_EQ(c.ffn(), oc.ffn());
  EXPECT_EQ(c.layer_types, oc.layer_types);
  EXPECT_EQ(c.hidden_size, oc.hidden_size);
  EXPECT_EQ(c.vocab_size, oc.vocab_size);
  EXPECT_EQ(c.num_attention_heads, oc.num_attention_heads);
  EXPECT_EQ(c.num_key_value_heads, oc.num_key_value_heads);
  EXPECT_EQ(c.rope_theta, oc.rope_theta);
  EXPECT_EQ(c.norm_eps, oc.norm_eps);
  EXPECT_EQ(c.conv_L_cache, oc.conv_L_cache);
  EXPECT_TRUE(c.tie_word_embeddings);
  // Same tensor names and shapes as the original checkpoint, f32, close to its values (4-bit).
  auto ours = formats::SafetensorsFile::open(work / "hf" / "model.safetensors");
  std::vector<fs::path> originals;
  for (const auto& e : fs::directory_iterator(original))
    if (e.path().extension() == ".safetensors") originals.push_back(e.path());
  ASSERT_EQ(originals.size(), 1u);
  auto theirs = formats::SafetensorsFile::open(originals[0]);
  ASSERT_EQ(ours.tensors().size(), theirs.tensors().size());
  for (const auto& [name, t] : theirs.tensors()) {
    ASSERT_TRUE(ours.has(name)) << name;
    EXPECT_EQ(ours.info(name).shape, t.shape) << name;
    EXPECT_EQ(ours.info(name).dtype, formats::DType::F32) << name;
    EXPECT_LT(formats::relative_l2(ours.to_f32(name), theirs.to_f32(name)), 0.2) << name;
  }
  EXPECT_EQ(ember::read_file(work / "hf" / "tokenizer.json"), ember::read_file(pack_dir / "tokenizer.json"));
  fs::remove_all(work);
}

TEST(Lfm2Export, BadInvocationsAreClearErrors) {
  fs::path work = temp_dir("errors");
  auto none = test::run_ember("dequant --out " + (work / "x").string());
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.out.find("--model DIR"), std::string::npos) << none.out;
  auto both = test::run_ember("dequant --model a --stage b --out " + (work / "x").string());
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  auto missing = test::run_ember("dequant --model " + (work / "nope").string() + " --out " + (work / "x").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.out.find("nope"), std::string::npos) << missing.out;
  EXPECT_FALSE(fs::exists(work / "x"));
  fs::remove_all(work);
}
