// config.json as transformers reads it: the MLP width rule of Lfm2MLP (block_auto_adjust_ff_dim,
// block_ffn_dim_multiplier, block_multiple_of) and the fields ember writes for it to read back.
#include <gtest/gtest.h>

#include "formats/json_text.h"
#include "formats/lfm2_checkpoint.h"

using namespace ember;

namespace {
formats::Lfm2Config parse(const std::string& extra) {
  const std::string text = R"({"model_type": "lfm2", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
    "vocab_size": 65536, "layer_types": ["conv", "full_attention"])" + extra + "}";
  return formats::parse_lfm2_config(formats::parse_json_text(text, "config.json"), "config.json");
}
}  // namespace

TEST(Lfm2Config, FfnWidthFollowsTransformers) {
  // LFM2-350M: int(2 * 6656 / 3) = 4437, times 1.0, rounded up to 256: 4608.
  EXPECT_EQ(parse(R"(, "intermediate_size": 6656, "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0)").ffn(), 4608);
  // An absent multiplier is transformers' default 1.0: the rounding applies.
  EXPECT_EQ(parse(R"(, "intermediate_size": 6656, "block_multiple_of": 256)").ffn(), 4608);
  // An explicit null multiplier: transformers keeps int(2 * F / 3) without rounding.
  EXPECT_EQ(parse(R"(, "intermediate_size": 6656, "block_multiple_of": 256, "block_ffn_dim_multiplier": null)").ffn(), 4437);
  // The rule off: the width as given.
  EXPECT_EQ(parse(R"(, "intermediate_size": 4608, "block_auto_adjust_ff_dim": false)").ffn(), 4608);
  // The seed shape: int(2 * 3840 / 3) = 2560, already a multiple of 256.
  EXPECT_EQ(parse(R"(, "intermediate_size": 3840, "block_auto_adjust_ff_dim": true)").ffn(), 2560);
}

// What ember writes (synth, dequant) reads back to the same config, the multiplier's null
// included, and names its dtype under both keys transformers has used.
TEST(Lfm2Config, WrittenConfigReadsBack) {
  formats::Lfm2Config c = parse(R"(, "intermediate_size": 6656, "block_ffn_dim_multiplier": null, "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0})");
  EXPECT_EQ(c.rope_theta, 5000.0);
  const auto j = formats::to_json(c, "float32");
  EXPECT_EQ(j["dtype"], "float32");
  EXPECT_EQ(j["torch_dtype"], "float32");
  EXPECT_EQ(j["rope_parameters"]["rope_theta"], 5000.0);
  EXPECT_TRUE(j["block_ffn_dim_multiplier"].is_null());
  const formats::Lfm2Config back = formats::parse_lfm2_config(j, "written");
  EXPECT_EQ(back.ffn(), c.ffn());
  EXPECT_EQ(back.ffn(), 4437);
  EXPECT_EQ(back.rope_theta, 5000.0);
  EXPECT_EQ(back.layer_types, c.layer_types);
}

// The keys of the released config.json files that transformers' Lfm2Config reads first:
// block_ff_dim over intermediate_size (LFM2-1.2B: 12288 beside 8192), tie_embedding over
// tie_word_embeddings, theta over rope_theta.
TEST(Lfm2Config, OriginalKeysTakePrecedenceAsInTransformers) {
  const auto c = parse(R"(, "intermediate_size": 8192, "block_ff_dim": 12288, "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": true, "tie_embedding": false, "tie_word_embeddings": true,
    "theta": 10000.0, "rope_theta": 1000000.0)");
  EXPECT_EQ(c.ffn(), 8192);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_theta, 10000.0);
  // Without them, the transformers names.
  const auto d = parse(R"(, "intermediate_size": 8192, "block_auto_adjust_ff_dim": false, "rope_theta": 5000.0)");
  EXPECT_EQ(d.ffn(), 8192);
  EXPECT_TRUE(d.tie_word_embeddings);
  EXPECT_EQ(d.rope_theta, 5000.0);
}
