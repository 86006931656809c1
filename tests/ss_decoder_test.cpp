// The sparse-structure decoder: config and state-dict names, the stage pack, and the GPU graph
// against the CPU reference (rel L2 and the occupied set).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "formats/ss_decoder_config.h"
#include "formats/trellis_packer.h"
#include "gpu_fixture.h"
#include "reference/ss_decoder_reference.h"
#include "trellis/ss_decoder.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

// The weights the GPU computes with: the synthetic ones through the pack's encodings and back.
std::map<std::string, std::vector<float>> dequantized(const trellis::TensorSource& s) {
  std::map<std::string, std::vector<float>> w;
  for (const auto& [name, shape] : s.shapes()) w[name] = trellis::dequantize(s.get(name));
  return w;
}

size_t occupied_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); i++) n += (a[i] > 0) != (b[i] > 0);
  return n;
}

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("ember_ssd_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

}  // namespace

TEST(SsDecoderConfig, ReleasedStateDictNames) {
  auto s = formats::ss_decoder_tensor_shapes(formats::ss_decoder_released_config());
  // 2 middle blocks + (2 res + up) + (2 res + up) + 2 res: blocks.0..7, upsamplers at 2 and 5.
  EXPECT_EQ(s.at("input_layer.weight"), (std::vector<int64_t>{512, 8, 3, 3, 3}));
  EXPECT_EQ(s.at("middle_block.1.conv2.weight"), (std::vector<int64_t>{512, 512, 3, 3, 3}));
  EXPECT_EQ(s.at("blocks.2.conv.weight"), (std::vector<int64_t>{1024, 512, 3, 3, 3}));
  EXPECT_EQ(s.at("blocks.5.conv.weight"), (std::vector<int64_t>{256, 128, 3, 3, 3}));
  EXPECT_EQ(s.at("blocks.7.norm2.bias"), (std::vector<int64_t>{32}));
  EXPECT_EQ(s.at("out_layer.2.weight"), (std::vector<int64_t>{1, 32, 3, 3, 3}));
  EXPECT_EQ(s.count("blocks.8.conv1.weight"), 0u);
  EXPECT_EQ(s.size(), 2u + 2 * 8 + 6 * 8 + 2 * 2 + 4u);  // input, middle, res blocks, upsamplers, out
  auto c = formats::infer_ss_decoder_config(s, "test");
  EXPECT_EQ(c.channels, (std::vector<int64_t>{512, 128, 32}));
  EXPECT_EQ(c.num_res_blocks, 2);
  EXPECT_EQ(c.num_res_blocks_middle, 2);
  EXPECT_EQ(c.latent_channels, 8);
  EXPECT_EQ(c.out_channels, 1);
}

TEST(SsDecoderConfig, ParsesUpstreamFilesAndRejectsOthers) {
  auto j = nlohmann::json::parse(R"({"name": "SparseStructureDecoder", "args": {"out_channels": 1, "latent_channels": 8,
      "num_res_blocks": 2, "num_res_blocks_middle": 2, "channels": [512, 128, 32], "use_fp16": true}})");
  auto c = formats::parse_ss_decoder_config(j, "cfg");
  EXPECT_EQ(c.channels.size(), 3u);
  auto vae = nlohmann::json::parse(R"({"models": {"decoder": {"name": "SparseStructureDecoder", "args": {"num_res_blocks": 1,
      "channels": [64, 16]}}}})");
  EXPECT_EQ(formats::parse_ss_decoder_config(vae, "cfg").channels, (std::vector<int64_t>{64, 16}));
  EXPECT_THROW(formats::parse_ss_decoder_config(nlohmann::json::parse(R"({"name": "SparseStructureFlowModel", "args": {}})"), "cfg"), Error);
  auto group = j;
  group["args"]["norm_type"] = "group";
  EXPECT_THROW(formats::parse_ss_decoder_config(group, "cfg"), Error);
}

TEST(SsDecoderConfig, InferRejectsMissingAndExtraTensors) {
  auto s = formats::ss_decoder_tensor_shapes(formats::ss_decoder_small_config());
  auto missing = s;
  missing.erase("blocks.0.norm2.bias");
  EXPECT_THROW(formats::infer_ss_decoder_config(missing, "x"), Error);
  auto extra = s;
  extra["pos_emb"] = {64, 8};
  EXPECT_THROW(formats::infer_ss_decoder_config(extra, "x"), Error);
  auto wrong = s;
  wrong["blocks.0.conv1.weight"] = {32, 32, 3, 3, 3};  // level 0 of the small config has 32 channels: fine
  EXPECT_NO_THROW(formats::infer_ss_decoder_config(wrong, "x"));
  wrong["blocks.0.conv1.weight"] = {16, 32, 3, 3, 3};
  EXPECT_THROW(formats::infer_ss_decoder_config(wrong, "x"), Error);
}

TEST(SsDecoderPack, ConvWeightsAreInt8MatricesNormsRawF16) {
  auto m = formats::plan_stage_pack(formats::ss_decoder_tensor_shapes(formats::ss_decoder_released_config()), {.stage = "sparseStructureDecoder"});
  const auto& conv = m.tensors.at("blocks.2.conv.weight");
  EXPECT_EQ(conv.encoding, "symmetric-quantized");
  EXPECT_EQ(conv.rows, 1024);
  EXPECT_EQ(conv.columns, 512 * 27);
  EXPECT_EQ(conv.padded_columns, 13824);
  const auto& in = m.tensors.at("input_layer.weight");
  EXPECT_EQ(in.columns, 216);
  EXPECT_EQ(in.padded_columns, 256);
  const auto& out = m.tensors.at("out_layer.2.weight");
  EXPECT_EQ(out.rows, 1);
  EXPECT_EQ(out.padded_rows, 16);
  EXPECT_EQ(m.tensors.at("blocks.0.norm1.weight").encoding, "raw");
  EXPECT_EQ(m.tensors.at("blocks.0.conv1.bias").encoding, "raw");
}

TEST(SsDecoderGpu, MatchesReferenceOnSmallConfig) {
  const auto cfg = formats::ss_decoder_small_config();
  auto stage = trellis::synth_ss_decoder_stage(cfg, 7);
  trellis::SsDecoderModel model(test::test_kernels(), stage, {4, 3, 5});
  EXPECT_EQ(model.output_extent(), (std::array<uint32_t, 3>{16, 12, 20}));
  reference::Volume latent{8, 4, 3, 5, test::random_floats(8 * 60, 5)};
  auto ref = reference::ss_decoder_forward(cfg, dequantized(stage), latent);
  auto got = model.decode(latent.v);
  ASSERT_EQ(got.size(), ref.v.size());
  EXPECT_LT(test::rel_l2(got, ref.v), 1e-4);
  EXPECT_EQ(occupied_mismatches(got, ref.v), 0u);
  size_t occupied = 0;
  for (float v : ref.v) occupied += v > 0;
  EXPECT_GT(occupied, ref.v.size() / 20);  // the check sees both signs
  EXPECT_LT(occupied, ref.v.size() * 19 / 20);
}

TEST(SsDecoderGpu, PackOnDiskRunsLikeMemory) {
  const auto cfg = formats::ss_decoder_small_config();
  auto weights = formats::synth_ss_decoder_weights(cfg, 3);
  const fs::path dir = temp_dir("pack");
  formats::write_stage_pack(dir, formats::ss_decoder_tensor_shapes(cfg), [&](const std::string& n) { return weights.at(n); },
                            {.stage = "sparseStructureDecoder"});
  auto pack = trellis::open_ss_decoder_stage(dir);
  auto mem = trellis::synth_ss_decoder_stage(cfg, 3);
  auto latent = test::random_floats(8 * 8, 1);
  trellis::SsDecoderModel a(test::test_kernels(), *pack, {2, 2, 2}), b(test::test_kernels(), mem, {2, 2, 2});
  EXPECT_EQ(a.decode(latent), b.decode(latent));
  fs::remove_all(dir);
}

TEST(SsDecoderGpu, WrongStageKindIsAnError) {
  const auto cfg = formats::ss_decoder_small_config();
  auto weights = formats::synth_ss_decoder_weights(cfg, 3);
  const fs::path dir = temp_dir("kind");
  formats::write_stage_pack(dir, formats::ss_decoder_tensor_shapes(cfg), [&](const std::string& n) { return weights.at(n); },
                            {.stage = "sparseStructureFlow"});
  try {
    trellis::open_ss_decoder_stage(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not sparseStructureDecoder"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}
