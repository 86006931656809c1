// LLM runtime packs: the seed-000 layout, runtime.json parsing, the quantizer, pack validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/llm_layout.h"
#include "formats/llm_pack.h"
#include "formats/llm_runtime.h"
#include "formats/q4_quantize.h"

namespace fs = std::filesystem;
using namespace ember::formats;

namespace {

const fs::path kSeed = fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/seed000_runtime.json";

RuntimeFile seed() { return parse_runtime_json(ember::read_file(kSeed), "seed000_runtime.json"); }

std::vector<float> gaussian(size_t n, uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Independent reading of the documented bit layout: element i of a nibble array is bits
// 4*(i%8).. of little-endian word i/8.
unsigned nib(std::span<const uint8_t> b, size_t i) {
  uint8_t byte = b[(i / 8) * 4 + (i % 8) / 2];
  return (i % 2) ? byte >> 4 : byte & 0xF;
}
float f32(std::span<const uint8_t> b, size_t i) {
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

}  // namespace

TEST(LlmLayout, ReproducesSeed000SectionTable) {
  RuntimeFile f = seed();
  LlmLayout l = llm_layout(f.runtime.shape, f.runtime.max_positions);
  ASSERT_EQ(l.sections.size(), f.runtime.sections.size());
  for (size_t i = 0; i < l.sections.size(); i++) {
    EXPECT_EQ(l.sections[i].name, f.runtime.sections[i].name) << "section " << i;
    EXPECT_EQ(l.sections[i].offset, f.runtime.sections[i].offset) << l.sections[i].name;
    EXPECT_EQ(l.sections[i].bytes, f.runtime.sections[i].bytes) << l.sections[i].name;
  }
  EXPECT_EQ(l.weight_bytes, f.runtime.weight_bytes);
  EXPECT_EQ(l.find("embed.quant")->alias_of, "head.quant");
}

TEST(LlmRuntime, SeedFieldsReadCorrectly) {
  RuntimeFile f = seed();
  const Runtime& r = f.runtime;
  EXPECT_EQ(r.shape.layers(), 14);
  EXPECT_EQ(r.shape.layer_types[2], LayerType::Attention);
  EXPECT_EQ(r.shape.layer_types[13], LayerType::Conv);
  EXPECT_EQ(r.shape.hidden, 1024);
  EXPECT_EQ(r.shape.ffn, 2560);
  EXPECT_EQ(r.shape.vocab, 65536);
  EXPECT_EQ(r.shape.heads, 16);
  EXPECT_EQ(r.shape.kv_heads, 8);
  EXPECT_EQ(r.shape.head_dim, 64);
  EXPECT_EQ(r.shape.conv_cache, 3);
  EXPECT_DOUBLE_EQ(r.shape.eps(), 1e-5);
  EXPECT_EQ(r.weights_url, "/weights.bin");
  EXPECT_EQ(r.max_queries, 1);
  EXPECT_EQ(r.max_positions, 2560);
  EXPECT_EQ(r.sample_partials, 256);
  EXPECT_EQ(r.plan_position, 1024);
  EXPECT_EQ(r.max_total_positions, 2112);
  ASSERT_NE(r.knee_for("conv_in_proj"), nullptr);
  EXPECT_EQ(r.knee_for("conv_in_proj")->rows_per_subgroup, 4);
  EXPECT_EQ(r.knee_for("conv_out_proj"), nullptr);
  EXPECT_EQ(r.dequant_variant, "carried");
  ASSERT_EQ(r.flash_optima.size(), 3u);
  EXPECT_EQ(r.flash_optima[2].positions, 2048);
  EXPECT_EQ(r.extra_features, (std::vector<std::string>{"timestamp-query", "shader-f16", "subgroups"}));
  EXPECT_EQ(r.power_preference, "high-performance");
  EXPECT_EQ(r.expected_subgroup_size, 32);
  const Candidate& c = f.candidate;
  EXPECT_TRUE(f.has_candidate);
  EXPECT_EQ(c.key, "MIX_M40");
  EXPECT_TRUE(c.flash);
  EXPECT_FALSE(c.unfused);
  EXPECT_EQ(c.flash_mode, "subgroup");
  ASSERT_EQ(c.matvec.size(), 5u);
  EXPECT_EQ(c.matvec[0].first, "attn_o_proj");
  EXPECT_EQ(c.matvec_for("conv_in_proj")->geometry.rows_per_subgroup, 6);
  EXPECT_EQ(c.matvec_for("head")->variant, "v3_both");
  EXPECT_EQ(c.matvec_for("mlp_down"), nullptr);
  EXPECT_EQ(c.mlp_slices, 40);
  EXPECT_EQ(c.mlp_workgroup, 1024);
  EXPECT_TRUE(c.norm_subgroup && c.conv_fuse && c.flash_online && c.mlp_pair && c.fold_subgroup);
  EXPECT_EQ(c.flash_blocks, 32);
  EXPECT_EQ(c.fold_lanes, 16);
  EXPECT_EQ(c.mlp_half_dot, "gate");
  EXPECT_EQ(c.mlp_half_product, "down");
  EXPECT_STREQ(c.down_copy(), "kquant");
  EXPECT_TRUE(f.unknown_keys.empty());
}

TEST(LlmRuntime, RoundTripsSeedTextExactly) {
  std::string text = ember::read_file(kSeed);
  EXPECT_EQ(to_json(parse_runtime_json(text, "seed")).dump(2), text);
}

TEST(LlmRuntime, UnknownKeysAreKeptAndReported) {
  OrderedJson j = OrderedJson::parse(ember::read_file(kSeed));
  j["runtime"]["futureLimit"] = 7;
  j["candidate"]["matvec"]["head"]["geometry"]["tile"] = 2;
  j["note"] = "hello";
  RuntimeFile f = parse_runtime_json(j.dump(2), "x");
  EXPECT_EQ(f.unknown_keys, (std::vector<std::string>{"runtime.futureLimit", "candidate.matvec.head.geometry.tile", "note"}));
  EXPECT_EQ(to_json(f), j);
}

TEST(LlmRuntime, MalformedJsonGivesLineAndColumn) {
  try {
    parse_runtime_json("{\n  \"runtime\": {\n    \"shape\": [1,,2]\n  }\n}", "runtime.json");
    FAIL();
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("runtime.json, line 3, column 17"), std::string::npos) << e.what();
  }
}

TEST(LlmRuntime, UnknownLayerTypeAndMissingFieldsAllReported) {
  OrderedJson j = OrderedJson::parse(ember::read_file(kSeed));
  j["runtime"]["shape"]["layerTypes"][3] = "mamba";
  j["runtime"]["shape"].erase("hidden");
  Problems p;
  parse_runtime_json(j.dump(), "runtime.json", p);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(p.list()[0].to_string().find("runtime.shape.layerTypes[3]: unknown layer type"), std::string::npos) << p.list()[0].to_string();
  EXPECT_NE(p.list()[1].to_string().find("runtime.shape.hidden: required field is missing"), std::string::npos);
}

TEST(Q4Quantize, SymmetricWithinBoundAndLayoutAsDocumented) {
  const int64_t rows = 37, cols = 96;
  std::vector<float> w = gaussian(rows * cols, 1, 0.05f);
  w[5] = 0.4f;  // an outlier block
  Q4Matrix q = quantize_q4_symmetric(w, rows, cols);
  std::vector<float> d = dequantize_q4_symmetric(q.quant_bytes(), q.scale_bytes(), rows, cols);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 0; b < cols / 32; b++) {
      std::span<const float> block(w.data() + r * cols + b * 32, 32);
      float bound = q4_symmetric_bound(block) * (1 + 1e-5f);
      for (int64_t i = 0; i < 32; i++) {
        size_t k = static_cast<size_t>(r * cols + b * 32 + i);
        ASSERT_LE(std::fabs(d[k] - w[k]), bound) << r << "," << b * 32 + i;
        // The test's own reading of the bits gives the same value.
        float mine = (static_cast<float>(nib(q.quant_bytes(), k)) - 8.0f) * f32(q.scale_bytes(), static_cast<size_t>(r * (cols / 32) + b));
        ASSERT_EQ(mine, d[k]);
      }
    }
  EXPECT_LT(relative_l2(d, w), 0.12);
}

TEST(Q4Quantize, AsymmetricWithinBound) {
  const int64_t rows = 29, cols = 64;  // rows*cols/32 = 58 zero points: not whole words
  std::vector<float> w = gaussian(rows * cols, 2, 0.05f);
  for (int i = 0; i < 32; i++) w[static_cast<size_t>(cols + i)] += 0.3f;  // an all-positive block
  Q4Matrix q = quantize_q4_asymmetric(w, rows, cols);
  EXPECT_EQ(q.zero_point_bytes().size(), q4_zero_point_bytes(rows, cols));
  std::vector<float> d = dequantize_q4_asymmetric(q.quant_bytes(), q.scale_bytes(), q.zero_point_bytes(), rows, cols);
  for (int64_t blk = 0; blk < rows * cols / 32; blk++) {
    std::span<const float> block(w.data() + blk * 32, 32);
    float bound = q4_asymmetric_bound(block) * (1 + 1e-5f);
    float s = f32(q.scale_bytes(), static_cast<size_t>(blk));
    float zp = static_cast<float>(nib(q.zero_point_bytes(), static_cast<size_t>(blk)));
    for (int64_t i = 0; i < 32; i++) {
      size_t k = static_cast<size_t>(blk * 32 + i);
      ASSERT_LE(std::fabs(d[k] - w[k]), bound) << k;
      ASSERT_EQ((static_cast<float>(nib(q.quant_bytes(), k)) - zp) * s, d[k]);
    }
  }
}

TEST(Q4Quantize, KMajorIsTheTransposeQuantized) {
  const int64_t rows = 64, cols = 40;  // down [hidden][ffn]: blocks run along the 64 outputs
  std::vector<float> w = gaussian(rows * cols, 3, 0.05f);
  Q4Matrix q = quantize_q4_kmajor(w, rows, cols);
  EXPECT_EQ(q.rows, cols);
  EXPECT_EQ(q.cols, rows);
  std::vector<float> d = dequantize_q4_kmajor(q.quant_bytes(), q.scale_bytes(), rows, cols);
  for (int64_t c = 0; c < cols; c++)
    for (int64_t r = 0; r < rows; r++) {
      size_t k = static_cast<size_t>(c * rows + r);  // stored index
      float s = f32(q.scale_bytes(), static_cast<size_t>(c * (rows / 32) + r / 32));
      ASSERT_EQ((static_cast<float>(nib(q.quant_bytes(), k)) - 8.0f) * s, d[static_cast<size_t>(r * cols + c)]);
      std::vector<float> block(32);
      for (int i = 0; i < 32; i++) block[i] = w[static_cast<size_t>(((r / 32) * 32 + i) * cols + c)];
      ASSERT_LE(std::fabs(d[static_cast<size_t>(r * cols + c)] - w[static_cast<size_t>(r * cols + c)]), q4_symmetric_bound(block) * (1 + 1e-5f));
    }
}

TEST(Q4Quantize, RejectsColumnsNotMultipleOf32) {
  std::vector<float> w(3 * 40);
  EXPECT_THROW(quantize_q4_symmetric(w, 3, 40), ember::Error);
}
