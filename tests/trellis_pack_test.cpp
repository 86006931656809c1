// TRELLIS stage packs: layout parity with seed 004, the seed as a manifest, round trips through
// synth -> pack -> dequantize (checked by an independent reference dequantizer), and bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"
#include "formats/trellis_packer.h"
#include "reference/int8_reference.h"
#include "ember_binary.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::formats;
using nlohmann::json;

namespace {

const fs::path kSeed = fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/seed004_manifest.json";

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_stage_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

int run_ember(const std::string& args, std::string* output = nullptr) {
  fs::path log = fs::temp_directory_path() / ("ember_stage_cli_" + std::to_string(::getpid()) + ".log");
  int rc = std::system((ember::test::ember_binary() + " " + args + " >" + log.string() + " 2>&1").c_str());
  if (output) *output = read_file(log);
  fs::remove(log);
  return WEXITSTATUS(rc);
}

// A tiny synthesized model packed with a small shard limit, so several shards exist.
struct TinyPack {
  SsFlowConfig config = ss_flow_tiny_config();
  std::map<std::string, std::vector<float>> weights = synth_ss_flow_weights(config, 7);
  std::map<std::string, std::vector<int64_t>> shapes = ss_flow_tensor_shapes(config);
  StagePackOptions options = [] {
    StagePackOptions o;
    o.shard_limit = 64 << 10;
    o.upstream_revision = "test";
    return o;
  }();
  std::vector<TensorPackReport> write(const fs::path& dir) {
    return write_stage_pack(dir, shapes, [&](const std::string& n) { return weights.at(n); }, options);
  }
};

json read_json(const fs::path& p) { return json::parse(read_file(p)); }
void write_json(const fs::path& p, const json& j) { write_file_atomic(p, j.dump(2)); }

}  // namespace

TEST(TrellisStagePack, SeedLayoutParity) {
  std::vector<PackProblem> problems;
  StageManifest seed = parse_stage_manifest(read_file(kSeed), kSeed.string(), problems);
  ASSERT_TRUE(problems.empty());
  StagePackOptions o;
  o.upstream_revision = seed.upstream_revision;
  StageManifest plan = plan_stage_pack(ss_flow_tensor_shapes(ss_flow_text_base_config()), o);
  ASSERT_EQ(plan.shards.size(), seed.shards.size());
  for (size_t i = 0; i < seed.shards.size(); i++) {
    EXPECT_EQ(plan.shards[i].file, seed.shards[i].file);
    EXPECT_EQ(plan.shards[i].bytes, seed.shards[i].bytes) << "shard " << i;
  }
  ASSERT_EQ(plan.tensors.size(), seed.tensors.size());
  for (const auto& [name, s] : seed.tensors) {
    ASSERT_TRUE(plan.tensors.count(name)) << name;
    const StageTensor& p = plan.tensors.at(name);
    EXPECT_EQ(p.shape, s.shape) << name;
    EXPECT_EQ(p.encoding, s.encoding) << name;
    EXPECT_EQ(p.dtype, s.dtype) << name;
    EXPECT_EQ(p.bits, s.bits) << name;
    EXPECT_EQ(p.group_size, s.group_size) << name;
    EXPECT_EQ(p.output_tile, s.output_tile) << name;
    EXPECT_EQ(p.rows, s.rows) << name;
    EXPECT_EQ(p.columns, s.columns) << name;
    EXPECT_EQ(p.padded_rows, s.padded_rows) << name;
    EXPECT_EQ(p.padded_columns, s.padded_columns) << name;
    EXPECT_EQ(p.data.shard, s.data.shard) << name;
    EXPECT_EQ(p.data.offset, s.data.offset) << name;
    EXPECT_EQ(p.data.bytes, s.data.bytes) << name;
    ASSERT_EQ(p.scales.has_value(), s.scales.has_value()) << name;
    if (s.scales) {
      EXPECT_EQ(p.scales->shard, s.scales->shard) << name;
      EXPECT_EQ(p.scales->offset, s.scales->offset) << name;
      EXPECT_EQ(p.scales->bytes, s.scales->bytes) << name;
    }
  }
  // With the seed's digests the written manifest is the seed, byte for byte (bar the final newline).
  for (size_t i = 0; i < plan.shards.size(); i++) plan.shards[i].sha256 = seed.shards[i].sha256;
  std::string ours = stage_manifest_json(plan), theirs = read_file(kSeed);
  while (!ours.empty() && ours.back() == '\n') ours.pop_back();
  while (!theirs.empty() && theirs.back() == '\n') theirs.pop_back();
  EXPECT_TRUE(ours == theirs) << "manifest text differs from seed 004";
}

TEST(TrellisStagePack, SeedParsesAndValidatesAsManifest) {
  StageManifest m = load_stage_manifest(kSeed);  // throws on any problem
  EXPECT_EQ(m.schema, "trellis-webgpu-pack");
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.stage, "sparseStructureFlow");
  EXPECT_EQ(m.upstream_revision, "f8e8cf00c40d53dea26b718e49169ce83cf24c67");
  EXPECT_EQ(m.tensors.size(), 249u);
  EXPECT_EQ(m.shards[2].sha256, "85b9ab636d6dca02c19b016429d30ea23cf1d36ae2398a67f202f7a8d6b211cf");
  const StageTensor& pe = m.tensors.at("pos_emb");
  EXPECT_TRUE(pe.quantized());
  EXPECT_EQ(pe.layout().data_bytes(), 4096u * 768u);
  // The config the seed's shapes imply is TRELLIS-text-base's.
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [n, t] : m.tensors) shapes[n] = t.shape;
  SsFlowConfig c = infer_ss_flow_config(shapes, "seed");
  EXPECT_EQ(c.model_channels, 768);
  EXPECT_EQ(c.cond_channels, 768);
  EXPECT_EQ(c.num_blocks, 12);
  EXPECT_EQ(c.num_heads, 12);
  EXPECT_EQ(c.mlp_ratio, 4.0);
  EXPECT_EQ(c.resolution, 16);
  EXPECT_EQ(c.in_channels, 8);
  EXPECT_EQ(c.out_channels, 8);
  EXPECT_TRUE(c.qk_rms_norm);
  EXPECT_FALSE(c.share_mod);
  // Without its shards the directory reports exactly the three missing files.
  fs::path dir = temp_dir("seedonly");
  fs::copy_file(kSeed, dir / "manifest.json");
  auto check = check_stage_pack(dir);
  ASSERT_EQ(check.problems.size(), 3u);
  for (const auto& p : check.problems) EXPECT_EQ(p.problem, "missing shard file");
  fs::remove_all(dir);
}

TEST(TrellisStagePack, UpstreamConfigFileAndPosEmb) {
  json upstream = {{"name", "SparseStructureFlowModel"},
                   {"args", {{"resolution", 16}, {"in_channels", 8}, {"out_channels", 8}, {"model_channels", 768},
                             {"cond_channels", 768}, {"num_blocks", 12}, {"num_heads", 12}, {"mlp_ratio", 4},
                             {"patch_size", 1}, {"pe_mode", "ape"}, {"qk_rms_norm", true}, {"use_fp16", true}}}};
  SsFlowConfig c = parse_ss_flow_config(upstream, "cfg");
  EXPECT_EQ(ss_flow_tensor_shapes(c), ss_flow_tensor_shapes(ss_flow_text_base_config()));
  EXPECT_EQ(ss_flow_tensor_shapes(parse_ss_flow_config(upstream["args"], "flat")), ss_flow_tensor_shapes(c));
  // pos_emb: token (d, h, w) gets [sin(d f), cos(d f), sin(h f), cos(h f), sin(w f), cos(w f)].
  SsFlowConfig t = ss_flow_tiny_config();  // 128 channels: freq_dim 21, 2 zero columns
  ASSERT_EQ(t.model_channels, 128);
  const int64_t C = 128, fd = 21;
  auto pe = ss_flow_pos_emb(t);
  int64_t d = 3, h = 1, w = 2, n = d * 16 + h * 4 + w;
  for (int64_t i = 0; i < fd; i++) {
    double f = std::pow(10000.0, -static_cast<double>(i) / static_cast<double>(fd));
    EXPECT_NEAR(pe[n * C + i], std::sin(d * f), 1e-6);
    EXPECT_NEAR(pe[n * C + fd + i], std::cos(d * f), 1e-6);
    EXPECT_NEAR(pe[n * C + 2 * fd + i], std::sin(h * f), 1e-6);
    EXPECT_NEAR(pe[n * C + 5 * fd + i], std::cos(w * f), 1e-6);
  }
  for (int64_t i = 6 * fd; i < C; i++) EXPECT_EQ(pe[n * C + i], 0.0f);
  EXPECT_TRUE(contains(error_of([&] { parse_ss_flow_config(json{{"name", "Other"}, {"args", json::object()}}, "cfg"); }),
                       "not SparseStructureFlowModel"));
}

TEST(TrellisStagePack, RoundTripWithinQuantizerBound) {
  TinyPack tp;
  fs::path dir = temp_dir("roundtrip") / "pack";
  auto reports = tp.write(dir);
  EXPECT_EQ(reports.size(), tp.shapes.size());
  StagePack pack = StagePack::open(dir);
  EXPECT_GT(pack.manifest().shards.size(), 1u) << "the 64 KiB limit must split the tiny pack";
  for (const auto& [name, src] : tp.weights) {
    const StageTensor& t = pack.tensor(name);
    std::vector<float> got = pack.dequantize(name);
    ASSERT_EQ(got.size(), src.size()) << name;
    if (t.quantized()) {
      auto ref = reference::dequantize_int8_tile_major(pack.data(t).data(), pack.scales(t).data(), t.rows, t.columns);
      EXPECT_EQ(got, ref) << name << ": StagePack and the reference dequantizer disagree";
      // |w - q*s| <= s/2 per element, s the scale of its row and group.
      auto scales = pack.scales(t);
      Int8TileLayout L = t.layout();
      for (int64_t r = 0; r < t.rows; r++)
        for (int64_t c = 0; c < t.columns; c++) {
          uint16_t sh;
          std::memcpy(&sh, scales.data() + 2 * L.scale_index(r, c), 2);
          float s = reference::half_to_float(sh);
          size_t i = static_cast<size_t>(r * t.columns + c);
          ASSERT_LE(std::fabs(got[i] - src[i]), 0.5f * s * (1 + 1e-6f) + 1e-12f) << name << " (" << r << ", " << c << ")";
        }
      // Padding is zero.
      auto data = pack.data(t);
      for (int64_t r = 0; r < t.padded_rows; r++)
        for (int64_t c = 0; c < t.padded_columns; c++)
          if (r >= t.rows || c >= t.columns) {
            ASSERT_EQ(data[L.data_index(r, c)], 0) << name;
          }
    } else {
      for (size_t i = 0; i < src.size(); i++) ASSERT_EQ(got[i], f16_to_f32(f32_to_f16(src[i]))) << name;
    }
  }
  // Re-packing the dequantized weights is exact: identical shards.
  std::map<std::string, std::vector<float>> deq;
  for (const auto& [name, v] : tp.weights) deq[name] = pack.dequantize(name);
  tp.weights = deq;
  fs::path dir2 = dir.parent_path() / "pack2";
  tp.write(dir2);
  for (const auto& s : pack.manifest().shards) EXPECT_EQ(read_file(dir / s.file), read_file(dir2 / s.file)) << s.file;
  fs::remove_all(dir.parent_path());
}

TEST(TrellisStagePack, QuantizerEdgeCases) {
  // Awkward shape (not multiples of tile or group), a zero row, tiny and large values.
  Int8TileLayout L{19, 70, 64, 16};
  std::vector<float> w(19 * 70);
  for (size_t i = 0; i < w.size(); i++) w[i] = std::sin(static_cast<float>(i) * 0.37f) * (i % 7 == 0 ? 1000.0f : 1.0f);
  for (int c = 0; c < 70; c++) w[5 * 70 + c] = 0.0f;
  w[6 * 70 + 3] = 1e-9f;
  Int8Tiles q = quantize_int8_tiles(w, L, "edge");
  std::vector<uint8_t> data(q.data.begin(), q.data.end());
  std::vector<uint8_t> scales(q.scales.size() * 2);
  std::memcpy(scales.data(), q.scales.data(), scales.size());
  auto got = dequantize_int8_tiles(data, scales, L);
  auto ref = reference::dequantize_int8_tile_major(data.data(), scales.data(), 19, 70);
  EXPECT_EQ(got, ref);
  for (int c = 0; c < 70; c++) EXPECT_EQ(got[5 * 70 + c], 0.0f);
  w[7] = NAN;
  EXPECT_TRUE(contains(error_of([&] { quantize_int8_tiles(w, L, "edge"); }), "non-finite"));
}

TEST(TrellisStagePack, CliSynthPackInspectDequant) {
  fs::path dir = temp_dir("cli");
  std::string out;
  ASSERT_EQ(run_ember("synth trellis-ss-flow --tiny --seed 3 --out " + (dir / "ckpt.safetensors").string(), &out), 0) << out;
  ASSERT_EQ(run_ember("pack trellis --stage ss-flow --from " + (dir / "ckpt.safetensors").string() + " --out " +
                      (dir / "pack").string(), &out), 0) << out;
  EXPECT_TRUE(contains(out, "int8 rel_l2 mean")) << out;
  ASSERT_EQ(run_ember("inspect --json " + (dir / "pack").string(), &out), 0) << out;
  json j = json::parse(out);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["config"]["args"]["model_channels"], 128);
  ASSERT_EQ(run_ember("dequant --stage " + (dir / "pack").string() + " --out " + (dir / "deq.safetensors").string(), &out), 0) << out;
  auto src = SafetensorsFile::open(dir / "ckpt.safetensors");
  auto deq = SafetensorsFile::open(dir / "deq.safetensors");
  StagePack pack = StagePack::open(dir / "pack");
  EXPECT_EQ(deq.tensors().size(), src.tensors().size());
  // Upstream's state-dict names (TRELLIS SparseStructureFlowModel), spelled out rather than taken
  // from our own name list, and the config beside them.
  for (const char* name : {"input_layer.weight", "t_embedder.mlp.0.weight", "t_embedder.mlp.2.bias", "pos_emb",
                           "blocks.0.adaLN_modulation.1.weight", "blocks.1.self_attn.to_qkv.weight",
                           "blocks.1.self_attn.q_rms_norm.gamma", "blocks.0.cross_attn.to_kv.weight", "blocks.0.norm2.bias",
                           "blocks.1.mlp.mlp.2.weight", "out_layer.bias"})
    EXPECT_TRUE(deq.has(name)) << name;
  EXPECT_EQ(json::parse(deq.metadata().at("config"))["args"]["model_channels"], 128);
  for (const auto& [name, info] : src.tensors()) {
    ASSERT_TRUE(deq.has(name)) << name;
    EXPECT_EQ(deq.info(name).shape, info.shape);
    EXPECT_EQ(deq.info(name).dtype, DType::F32);
    EXPECT_EQ(deq.to_f32(name), pack.dequantize(name)) << name;
  }
  // Re-packing ember dequant's output gives identical shards (quantizing quantized values is exact).
  ASSERT_EQ(run_ember("pack trellis --quiet --stage ss-flow --from " + (dir / "deq.safetensors").string() + " --out " +
                      (dir / "pack2").string(), &out), 0) << out;
  EXPECT_EQ(read_file(dir / "pack/stage-000.bin"), read_file(dir / "pack2/stage-000.bin"));
  fs::remove_all(dir);
}

// Each corruption of a good pack gives a clear error; `mutate` edits the copy in `dir`.
class StagePackBadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    good_ = new fs::path(temp_dir("bad_good") / "pack");
    TinyPack tp;
    tp.write(*good_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(good_->parent_path());
    delete good_;
  }
  std::string open_error(const std::function<void(const fs::path&, json&)>& mutate) {
    fs::path dir = temp_dir("bad_case");
    fs::copy(*good_, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    json m = read_json(dir / "manifest.json");
    mutate(dir, m);
    if (!m.is_null()) write_json(dir / "manifest.json", m);
    std::string e = error_of([&] { StagePack::open(dir); });
    fs::remove_all(dir);
    return e;
  }
  static fs::path* good_;
};
fs::path* StagePackBadInput::good_ = nullptr;

TEST_F(StagePackBadInput, Sha256Mismatch) {
  std::string e = open_error([](const fs::path& d, json&) {
    std::fstream f(d / "stage-001.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  });
  EXPECT_TRUE(contains(e, "stage-001.bin")) << e;
  EXPECT_TRUE(contains(e, "sha256 mismatch")) << e;
}

TEST_F(StagePackBadInput, MissingShard) {
  std::string e = open_error([](const fs::path& d, json&) { fs::remove(d / "stage-000.bin"); });
  EXPECT_TRUE(contains(e, "stage-000.bin")) << e;
  EXPECT_TRUE(contains(e, "missing shard file")) << e;
}

TEST_F(StagePackBadInput, TruncatedShard) {
  std::string e = open_error([](const fs::path& d, json&) {
    fs::resize_file(d / "stage-000.bin", fs::file_size(d / "stage-000.bin") - 1000);
  });
  EXPECT_TRUE(contains(e, "truncated shard")) << e;
  EXPECT_TRUE(contains(e, "expected")) << e;
}

TEST_F(StagePackBadInput, TensorPastEndOfShard) {
  std::string e = open_error([](const fs::path&, json& m) {
    uint64_t size = m["shards"][0]["bytes"];
    m["tensors"]["blocks.0.adaLN_modulation.1.bias"]["data"]["offset"] = size - 256;
  });
  EXPECT_TRUE(contains(e, "tensors.blocks.0.adaLN_modulation.1.bias.data")) << e;
  EXPECT_TRUE(contains(e, "past the end of its shard")) << e;
}

TEST_F(StagePackBadInput, UnknownEncoding) {
  std::string e = open_error([](const fs::path&, json& m) { m["tensors"]["pos_emb"]["encoding"] = "q4-asymmetric"; });
  EXPECT_TRUE(contains(e, "tensors.pos_emb.encoding: unknown encoding")) << e;
  EXPECT_TRUE(contains(e, "\"q4-asymmetric\"")) << e;
}

TEST_F(StagePackBadInput, OverlappingTensors) {
  std::string e = open_error([](const fs::path&, json& m) {
    // The whole range of another tensor (same shard, same offset).
    m["tensors"]["blocks.0.cross_attn.to_kv.bias"]["data"] = m["tensors"]["blocks.0.adaLN_modulation.1.weight"]["data"];
    m["tensors"]["blocks.0.cross_attn.to_kv.bias"]["data"]["bytes"] = m["tensors"]["blocks.0.cross_attn.to_kv.bias"]["shape"][0].get<int>() * 2;
  });
  EXPECT_TRUE(contains(e, "overlaps")) << e;
  EXPECT_TRUE(contains(e, "blocks.0.cross_attn.to_kv.bias")) << e;
}

TEST_F(StagePackBadInput, MisalignedAndWrongByteCount) {
  std::string e = open_error([](const fs::path&, json& m) {
    m["tensors"]["out_layer.bias"]["data"]["offset"] = m["tensors"]["out_layer.bias"]["data"]["offset"].get<uint64_t>() + 4;
    m["tensors"]["input_layer.weight"]["padded_columns"] = 8;
  });
  // Both problems at once.
  EXPECT_TRUE(contains(e, "2 problems")) << e;
  EXPECT_TRUE(contains(e, "not 256-aligned")) << e;
  EXPECT_TRUE(contains(e, "input_layer.weight.padded_columns")) << e;
}

TEST_F(StagePackBadInput, MalformedJsonHasLineAndColumn) {
  size_t line = 0, column = 0;
  std::string e = open_error([&](const fs::path& d, json& m) {
    std::string text = m.dump(2);
    size_t at = text.find("\"stage\"");
    text.insert(at, "oops ");
    line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    column = at - text.rfind('\n', at);
    write_file_atomic(d / "manifest.json", text);
    m = nullptr;
  });
  EXPECT_TRUE(contains(e, "malformed JSON")) << e;
  EXPECT_TRUE(contains(e, "manifest.json, line " + std::to_string(line) + ", column " + std::to_string(column))) << e;
}

TEST_F(StagePackBadInput, WrongSchemaAndVersion) {
  std::string e = open_error([](const fs::path&, json& m) {
    m["schema"] = "something-else";
    m["version"] = 2;
  });
  EXPECT_TRUE(contains(e, "schema: not a TRELLIS stage pack: expected \"trellis-webgpu-pack\", found \"something-else\"")) << e;
  EXPECT_TRUE(contains(e, "version: unsupported version: expected 1, found 2")) << e;
}

TEST_F(StagePackBadInput, TensorStraddlesShards) {
  std::string e = open_error([](const fs::path&, json& m) { m["tensors"]["pos_emb"]["scales"]["shard"] = 0; });
  EXPECT_TRUE(contains(e, "straddles shards")) << e;
}

TEST(TrellisStagePack, CheckpointMissingTensorLeavesNoOutput) {
  fs::path dir = temp_dir("missing");
  SsFlowConfig c = ss_flow_tiny_config();
  auto weights = synth_ss_flow_weights(c, 1);
  auto shapes = ss_flow_tensor_shapes(c);
  std::vector<TensorToWrite> tensors;
  for (auto& [name, v] : weights) {
    if (name == "blocks.1.cross_attn.to_q.weight") continue;
    TensorToWrite t{name, DType::F32, shapes.at(name), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    tensors.push_back(std::move(t));
  }
  write_safetensors(dir / "ckpt.safetensors", tensors);
  std::string out;
  for (std::string config_arg : {std::string(""), std::string(" --config ") + (dir / "cfg.json").string()}) {
    write_file_atomic(dir / "cfg.json", c.to_json().dump());
    EXPECT_NE(run_ember("pack trellis --stage ss-flow --from " + (dir / "ckpt.safetensors").string() + config_arg +
                        " --out " + (dir / "pack").string(), &out), 0);
    EXPECT_TRUE(contains(out, "blocks.1.cross_attn.to_q.weight")) << out;
    EXPECT_TRUE(contains(out, "missing") || contains(out, "lacks")) << out;
    EXPECT_FALSE(fs::exists(dir / "pack"));
  }
  // A loader failing midway (after shards were written) leaves nothing either.
  TinyPack tp;
  EXPECT_TRUE(contains(error_of([&] {
                         write_stage_pack(dir / "pack", tp.shapes, [&](const std::string& n) -> std::vector<float> {
                           if (n == "pos_emb") throw Error("read failed", n);
                           return tp.weights.at(n);
                         }, tp.options);
                       }), "read failed"));
  EXPECT_FALSE(fs::exists(dir / "pack"));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_FALSE(contains(e.path().filename().string(), "pack")) << e.path();
  fs::remove_all(dir);
}
