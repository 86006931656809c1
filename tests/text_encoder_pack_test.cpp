// The textEncoder stage pack: seed 004's layout rules at the ViT-L/14 text shape (like the seed's
// own layout test), the side files, and the checkpoint reader's bad input (a clear error naming
// the file, tensor or field; no pack written).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/sha256.h"
#include "formats/trellis_pack.h"
#include "trellis/clip_checkpoint.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_text_pack_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted one with '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "wanted '" << needle << "' in: " << e.what();
  }
}

class Scratch : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { fs::remove_all(fs::temp_directory_path() / ("ember_text_pack_" + std::to_string(::getpid()))); }
};

}  // namespace

class TextEncoderPackLayout : public Scratch {};

TEST_F(TextEncoderPackLayout, VitL14FollowsTheSeedRules) {
  const auto c = formats::clip_vit_l14_text_config();
  const auto shapes = formats::clip_text_tensor_shapes(c);
  EXPECT_EQ(shapes.size(), 2u + 12u * 16u + 2u);
  formats::StagePackOptions o;
  o.stage = trellis::kTextEncoderStage;
  auto m = formats::plan_stage_pack(shapes, o);
  for (auto& s : m.shards) s.sha256 = std::string(64, '0');  // the plan has no contents yet
  EXPECT_TRUE(formats::validate_stage_manifest(m).empty());
  EXPECT_EQ(m.stage, "textEncoder");
  uint32_t shard = 0;
  uint64_t cursor = 0;  // the end of the previous range in the current shard
  for (const auto& [name, t] : m.tensors) {  // sorted by name, as the seed's tensors
    const bool matrix = t.shape.size() == 2;
    EXPECT_EQ(t.quantized(), matrix) << name;  // every rank-2 *.weight (embeddings included) int8, the rest raw f16
    if (t.data.shard != shard) {
      EXPECT_EQ(t.data.shard, shard + 1) << name;
      EXPECT_EQ(t.data.offset, 0u) << name << ": a new shard starts with it";
      shard = t.data.shard;
      cursor = 0;
    }
    EXPECT_EQ(t.data.offset % 256, 0u) << name;
    EXPECT_EQ(t.data.offset, (cursor + 255) / 256 * 256) << name << ": packed right after the previous tensor";
    cursor = t.data.offset + t.data.bytes;
    if (t.quantized()) {
      EXPECT_EQ(t.bits, 8u);
      EXPECT_EQ(t.group_size, 64u);
      EXPECT_EQ(t.output_tile, 16u);
      EXPECT_EQ(t.padded_rows % 16, 0);
      EXPECT_EQ(t.padded_columns % 64, 0);
      EXPECT_EQ(t.data.bytes, uint64_t(t.padded_rows * t.padded_columns)) << name;
      ASSERT_TRUE(t.scales);
      EXPECT_EQ(t.scales->shard, t.data.shard) << name << " straddles shards";
      EXPECT_EQ(t.scales->offset, (cursor + 255) / 256 * 256) << name;
      EXPECT_EQ(t.scales->bytes, uint64_t(t.padded_rows * (t.padded_columns / 64) * 2)) << name;
      cursor = t.scales->offset + t.scales->bytes;
    } else {
      EXPECT_EQ(t.dtype, "f16");
      EXPECT_EQ(t.data.bytes, uint64_t(t.numel() * 2)) << name;
    }
    EXPECT_LE(cursor, m.shards[shard].bytes) << name;
  }
  for (const auto& s : m.shards) {
    EXPECT_LE(s.bytes, 64ull << 20) << s.file;
    EXPECT_EQ(s.bytes % 256, 0u) << s.file;
  }
  const auto& tok = m.tensors.at("text_model.embeddings.token_embedding.weight");
  EXPECT_EQ(tok.rows, 49408);
  EXPECT_EQ(tok.data.bytes, 49408u * 768u);
  EXPECT_EQ(tok.scales->bytes, 49408u * 12u * 2u);
  const auto& fc2 = m.tensors.at("text_model.encoder.layers.11.mlp.fc2.weight");
  EXPECT_EQ(fc2.rows, 768);
  EXPECT_EQ(fc2.columns, 3072);
  EXPECT_GE(m.shards.size(), 2u);  // ~121 MiB of int8, scales and f16 in shards of at most 64 MiB
}

TEST_F(TextEncoderPackLayout, TinyPackHoldsItsSideFilesAndZeroPadding) {
  const auto c = formats::clip_tiny_text_config();
  const fs::path ckpt = scratch("tiny_ckpt"), stage = scratch("tiny_stage");
  trellis::write_synth_clip_checkpoint(ckpt, c, 9, false);
  trellis::pack_clip_text_stage(trellis::open_clip_checkpoint(ckpt), stage, {});
  auto pack = formats::StagePack::open(stage);
  const auto& files = pack.manifest().files;
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files) {
    const std::string text = read_file(stage / f.file);
    EXPECT_EQ(f.bytes, text.size());
    EXPECT_EQ(f.sha256, formats::sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  }
  EXPECT_EQ(pack.side_file("tokenizer.json"), read_file(ckpt / "tokenizer.json"));
  EXPECT_EQ(formats::parse_clip_text_config(nlohmann::json::parse(pack.side_file("config.json")), "config").hidden_size, 128);
  // Padding is zero: the token table's rows 1000..1007, fc2's columns 336..383.
  const auto& tok = pack.tensor("text_model.embeddings.token_embedding.weight");
  EXPECT_EQ(tok.padded_rows, 1008);
  auto data = pack.data(tok);
  const int64_t groups = tok.padded_columns / 64, last_tile = tok.padded_rows / 16 - 1;
  for (int64_t g = 0; g < groups; g++)
    for (int64_t r = 8; r < 16; r++)
      for (int64_t k = 0; k < 64; k++) ASSERT_EQ(data[size_t(((last_tile * groups + g) * 16 + r) * 64 + k)], 0);
  const auto& fc2 = pack.tensor("text_model.encoder.layers.0.mlp.fc2.weight");
  EXPECT_EQ(fc2.padded_columns, 384);
  auto d2 = pack.data(fc2);
  for (int64_t tile = 0; tile < fc2.padded_rows / 16; tile++)
    for (int64_t r = 0; r < 16; r++)
      for (int64_t k = 336 - 320; k < 64; k++) ASSERT_EQ(d2[size_t(((tile * 6 + 5) * 16 + r) * 64 + k)], 0);
}

class ClipCheckpointErrors : public Scratch {
 protected:
  fs::path good(const std::string& name) {
    fs::path d = scratch(name);
    trellis::write_synth_clip_checkpoint(d, formats::clip_tiny_text_config(), 4, true);
    return d;
  }
  void set_config(const fs::path& d, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(read_file(d / "config.json"));
    edit(j);
    write_file_atomic(d / "config.json", j.dump());
  }
  void expect_pack_error(const fs::path& d, const std::string& needle) {
    const fs::path out = d.string() + "_stage";
    expect_error([&] { trellis::pack_clip_text_stage(trellis::open_clip_checkpoint(d), out, {}); }, needle);
    EXPECT_FALSE(fs::exists(out)) << "a failed pack left " << out;
  }
};

TEST_F(ClipCheckpointErrors, NonClipCheckpoint) {
  auto d = good("lfm2");
  set_config(d, [](nlohmann::json& j) { j["model_type"] = "lfm2"; });
  expect_pack_error(d, "not a CLIP checkpoint");
}

TEST_F(ClipCheckpointErrors, MissingTokenizer) {
  auto d = good("no_tokenizer");
  fs::remove(d / "tokenizer.json");
  expect_pack_error(d, "no tokenizer.json");
}

TEST_F(ClipCheckpointErrors, TokenizerWithoutClipSpecials) {
  auto d = good("bad_tokenizer");
  write_file_atomic(d / "tokenizer.json", read_file(fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/tokenizers/qwen3.json"));
  expect_pack_error(d, "has no <|startoftext|> token");
}

TEST_F(ClipCheckpointErrors, MissingOrMisshapenTensor) {
  auto d = good("missing_tensor");
  set_config(d, [](nlohmann::json& j) { j["num_hidden_layers"] = 3; });  // the file has 2 layers
  expect_pack_error(d, "tensor 'text_model.encoder.layers.2.layer_norm1.bias' is missing");
  auto e = good("misshapen");
  set_config(e, [](nlohmann::json& j) { j["intermediate_size"] = 400; });
  expect_pack_error(e, "tensor 'text_model.encoder.layers.0.mlp.fc1.bias' has shape [336], config.json implies [400]");
}

TEST_F(ClipCheckpointErrors, UnsupportedActivationOrHeads) {
  auto d = good("gelu");
  set_config(d, [](nlohmann::json& j) { j["hidden_act"] = "gelu"; });
  expect_pack_error(d, "hidden_act \"gelu\" is not supported");
  auto e = good("heads");
  set_config(e, [](nlohmann::json& j) { j["num_attention_heads"] = 4; });
  expect_pack_error(e, "is not heads of 64 channels");
}

TEST_F(ClipCheckpointErrors, FullClipModelIgnoresTheVisionTower) {
  auto d = good("full_clip");
  set_config(d, [](nlohmann::json& j) { j = {{"model_type", "clip"}, {"text_config", j}, {"vision_config", {{"hidden_size", 64}}}}; });
  auto st = formats::SafetensorsFile::open(d / "model.safetensors");
  std::vector<formats::TensorToWrite> tensors;
  for (const auto& [name, info] : st.tensors()) {
    auto b = st.bytes(name);
    tensors.push_back({name, info.dtype, info.shape, {b.begin(), b.end()}});
  }
  tensors.push_back({"vision_model.embeddings.class_embedding", formats::DType::F16, {64}, std::vector<uint8_t>(128)});
  tensors.push_back({"text_projection.weight", formats::DType::F16, {128, 128}, std::vector<uint8_t>(128 * 128 * 2)});
  formats::write_safetensors(d / "model.safetensors", tensors);
  auto ckpt = trellis::open_clip_checkpoint(d);
  EXPECT_EQ(ckpt.ignored, (std::vector<std::string>{"text_projection.weight", "vision_model.embeddings.class_embedding"}));
  const fs::path out = scratch("full_clip_stage");
  trellis::pack_clip_text_stage(ckpt, out, {});
  EXPECT_FALSE(formats::StagePack::open(out).has("text_projection.weight"));
}

TEST(ClipTextConfig, SynthConfigIsTransformersCLIPTextConfig) {
  const auto c = formats::clip_vit_l14_text_config();
  const auto j = c.to_json("float16");
  EXPECT_EQ(j["model_type"], "clip_text_model");
  EXPECT_EQ(j["architectures"][0], "CLIPTextModel");
  EXPECT_EQ(j["hidden_act"], "quick_gelu");
  EXPECT_EQ(j["dtype"], "float16");
  const auto back = formats::parse_clip_text_config(j, "config");
  EXPECT_EQ(back.hidden_size, 768);
  EXPECT_EQ(back.num_attention_heads, 12);
  EXPECT_EQ(back.intermediate_size, 3072);
  EXPECT_EQ(back.layer_norm_eps, 1e-5);
  // Fields a file leaves out take transformers' CLIPTextConfig defaults (8 heads of a 512 width).
  const auto d = formats::parse_clip_text_config({{"model_type", "clip_text_model"}}, "config");
  EXPECT_EQ(d.hidden_size, 512);
  EXPECT_EQ(d.num_attention_heads, 8);
}
