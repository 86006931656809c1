// `ember synth lfm2` -> `ember pack lfm2` -> LlmPack: round trips against the checkpoint (checked
// with the test tree's own q4 reference dequantizer), seed-000 layout parity through the real
// packer, and every kind of bad input, each a clear error that leaves no output behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/lfm2_packer.h"
#include "formats/lfm2_synth.h"
#include "formats/llm_pack.h"
#include "formats/q4_quantize.h"
#include "formats/safetensors.h"
#include "reference/q4_reference.h"
#include "ember_binary.h"

namespace fs = std::filesystem;
using namespace ember::formats;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_lfm2_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int run_ember(const std::string& args, std::string* output = nullptr) {
  fs::path log = fs::temp_directory_path() / ("ember_lfm2_cli_" + std::to_string(::getpid()) + ".log");
  int rc = std::system((ember::test::ember_binary() + " " + args + " >" + log.string() + " 2>&1").c_str());
  if (output) *output = ember::read_file(log);
  fs::remove(log);
  return WEXITSTATUS(rc);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The error text of `fn`, or "" when it does not throw.
template <typename F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}

// Pack sections -> the reference's Q4Host, then the reference dequantizes.
std::vector<uint32_t> words(std::span<const uint8_t> b) {
  std::vector<uint32_t> w(b.size() / 4);
  std::memcpy(w.data(), b.data(), w.size() * 4);
  return w;
}
std::vector<float> reference_dequant(const LlmPack& pack, const std::string& prefix, const std::string& q, const std::string& s,
                                     uint32_t rows, uint32_t cols, bool zp) {
  ember::reference::Q4Host h;
  h.rows = rows;
  h.cols = cols;
  h.quant = words(pack.section(prefix + q));
  std::span<const float> sc = pack.f32_section(prefix + s);
  h.scales.assign(sc.begin(), sc.end());
  if (zp) h.zero_points = words(pack.section(prefix + ".zero_points"));
  return ember::reference::dequantize_q4(h);
}

// |deq - w| within the quantizer's documented bound, block by block (blocks along rows of
// the stored orientation: `transposed` for k-major).
void expect_within_bound(const std::vector<float>& deq, const std::vector<float>& w, int64_t rows, int64_t cols, bool asym,
                         const std::string& what) {
  ASSERT_EQ(deq.size(), w.size()) << what;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 0; b < cols / 32; b++) {
      std::span<const float> block(w.data() + r * cols + b * 32, 32);
      float bound = (asym ? q4_asymmetric_bound(block) : q4_symmetric_bound(block)) * (1 + 1e-5f) + 1e-12f;
      for (int64_t i = 0; i < 32; i++) {
        size_t k = static_cast<size_t>(r * cols + b * 32 + i);
        ASSERT_LE(std::fabs(deq[k] - w[k]), bound) << what << " [" << r << "][" << b * 32 + i << "]";
      }
    }
}

std::vector<float> rows_concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<float> transpose(const std::vector<float>& a, int64_t rows, int64_t cols) {
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) t[static_cast<size_t>(c * rows + r)] = a[static_cast<size_t>(r * cols + c)];
  return t;
}

void check_round_trip(const fs::path& hf, const fs::path& out) {
  LlmPack pack = LlmPack::open(out);
  SafetensorsFile ck = SafetensorsFile::open(hf / "model.safetensors");
  const LlmShape& s = pack.shape();
  const uint32_t H = static_cast<uint32_t>(s.hidden), F = static_cast<uint32_t>(s.ffn);
  for (int i = 0; i < s.layers(); i++) {
    const std::string hp = "model.layers." + std::to_string(i) + ".", p = layer_prefix(i);
    auto sym = [&](const std::string& name, const std::vector<float>& w, uint32_t rows, uint32_t cols) {
      std::vector<float> deq = reference_dequant(pack, name, ".quant", ".scales", rows, cols, false);
      expect_within_bound(deq, w, rows, cols, false, name);
      EXPECT_EQ(deq, pack.dequantize(name, "quant")) << name;  // production dequantizer agrees bit for bit
    };
    if (s.layer_types[i] == LayerType::Conv) {
      sym(p + "conv.in_proj", ck.to_f32(hp + "conv.in_proj.weight"), 3 * H, H);
      sym(p + "conv.out_proj", ck.to_f32(hp + "conv.out_proj.weight"), H, H);
      std::span<const float> taps = pack.f32_section(p + "conv.core.taps");
      EXPECT_EQ(std::vector<float>(taps.begin(), taps.end()), ck.to_f32(hp + "conv.conv.weight"));
      std::span<const float> norm = pack.f32_section(p + "conv.in_proj.norm");
      EXPECT_EQ(std::vector<float>(norm.begin(), norm.end()), ck.to_f32(hp + "operator_norm.weight"));
    } else {
      sym(p + "attn.qkv", rows_concat({ck.to_f32(hp + "self_attn.q_proj.weight"), ck.to_f32(hp + "self_attn.k_proj.weight"),
                                       ck.to_f32(hp + "self_attn.v_proj.weight")}),
          static_cast<uint32_t>(s.qkv_rows()), H);
      sym(p + "attn.o_proj", ck.to_f32(hp + "self_attn.out_proj.weight"), H, static_cast<uint32_t>(s.q_rows()));
      std::span<const float> qn = pack.f32_section(p + "attn.qkv.q_norm");
      EXPECT_EQ(std::vector<float>(qn.begin(), qn.end()), ck.to_f32(hp + "self_attn.q_layernorm.weight"));
      std::span<const float> kn = pack.f32_section(p + "attn.qkv.k_norm");
      EXPECT_EQ(std::vector<float>(kn.begin(), kn.end()), ck.to_f32(hp + "self_attn.k_layernorm.weight"));
    }
    sym(p + "mlp.gate_up", rows_concat({ck.to_f32(hp + "feed_forward.w1.weight"), ck.to_f32(hp + "feed_forward.w3.weight")}), 2 * F, H);
    std::vector<float> down = ck.to_f32(hp + "feed_forward.w2.weight");
    sym(p + "mlp.down", down, H, F);
    // k-major: the reference dequantizes the stored [ffn][hidden] matrix.
    std::vector<float> kdeq = reference_dequant(pack, p + "mlp.down", ".kquant", ".kscales", F, H, false);
    expect_within_bound(kdeq, transpose(down, H, F), F, H, false, p + "mlp.down.kquant");
    EXPECT_EQ(transpose(kdeq, F, H), pack.dequantize(p + "mlp.down", "kquant"));
    std::span<const float> gn = pack.f32_section(p + "mlp.gate_up.norm");
    EXPECT_EQ(std::vector<float>(gn.begin(), gn.end()), ck.to_f32(hp + "ffn_norm.weight"));
  }
  std::vector<float> embed = ck.to_f32("model.embed_tokens.weight");
  std::vector<float> hdeq = reference_dequant(pack, "head", ".quant", ".scales", static_cast<uint32_t>(s.vocab), H, true);
  expect_within_bound(hdeq, embed, s.vocab, H, true, "head");
  EXPECT_EQ(pack.section("embed.quant").data(), pack.section("head.quant").data());
  std::span<const float> hn = pack.f32_section("head.norm");
  EXPECT_EQ(std::vector<float>(hn.begin(), hn.end()), ck.to_f32("model.embedding_norm.weight"));
  // Rope tables against a double-precision evaluation.
  std::span<const float> cos = pack.f32_section("rope.cos_ext"), sin = pack.f32_section("rope.sin_ext");
  const int64_t half = s.head_dim / 2, positions = pack.runtime().max_positions;
  ASSERT_EQ(static_cast<int64_t>(cos.size()), positions * half);
  for (int64_t pos = 0; pos < positions; pos += 7)
    for (int64_t i = 0; i < half; i++) {
      double angle = static_cast<double>(pos) * std::pow(*s.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(s.head_dim));
      ASSERT_NEAR(cos[static_cast<size_t>(pos * half + i)], std::cos(angle), 2e-4) << pos << "," << i;
      ASSERT_NEAR(sin[static_cast<size_t>(pos * half + i)], std::sin(angle), 2e-4) << pos << "," << i;
    }
  std::span<const float> cshort = pack.f32_section("rope.cos");
  EXPECT_TRUE(std::equal(cshort.begin(), cshort.end(), cos.begin()));
  EXPECT_TRUE(fs::exists(pack.tokenizer_path()));
}

// One valid tiny pack per test binary run, copied by the tests that damage it.
struct TinyPackDir {
  fs::path dir = temp_dir("tiny");
  TinyPackDir() {
    synth_lfm2_checkpoint(lfm2_preset("tiny"), dir / "hf", {.seed = 5});
    pack_lfm2(dir / "hf", dir / "pack");
  }
  ~TinyPackDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};
const fs::path& tiny_pack() {
  static TinyPackDir d;
  return d.dir;
}

fs::path damaged_copy(const std::string& name) {
  fs::path d = temp_dir("bad_" + name);
  fs::copy(tiny_pack() / "pack", d, fs::copy_options::recursive);
  return d;
}

OrderedJson read_runtime(const fs::path& d) { return OrderedJson::parse(ember::read_file(d / "runtime.json")); }
void write_runtime(const fs::path& d, const OrderedJson& j) { ember::write_file_atomic(d / "runtime.json", j.dump(2)); }
OrderedJson& section_named(OrderedJson& j, const std::string& name) {
  for (auto& s : j["runtime"]["sections"])
    if (s["name"] == name) return s;
  throw std::runtime_error("no section " + name);
}

}  // namespace

TEST(Lfm2Pack, TinyRoundTripF32) {
  const fs::path& d = tiny_pack();
  check_round_trip(d / "hf", d / "pack");
  LlmPack pack = LlmPack::open(d / "pack");
  EXPECT_STREQ(pack.candidate().down_copy(), "quant");
  EXPECT_EQ(pack.runtime().max_positions, 512);
  EXPECT_EQ(pack.shape().ffn, 128);
  EXPECT_EQ(pack.layout().weight_bytes, pack.runtime().weight_bytes);
}

// with_file: the same mapped weights under another runtime.json's choices, refused for a file
// that describes other weights.
TEST(Lfm2Pack, WithFileKeepsTheWeightsAndRefusesOtherOnes) {
  LlmPack pack = LlmPack::open(tiny_pack() / "pack");
  RuntimeFile f = pack.file();
  f.candidate.key = "another";
  f.candidate.mlp_pair = true;
  LlmPack other = pack.with_file(f);
  EXPECT_EQ(other.candidate().key, "another");
  EXPECT_STREQ(other.candidate().down_copy(), "kquant");
  EXPECT_EQ(other.json()["candidate"]["key"], "another");
  EXPECT_EQ(other.weights().data(), pack.weights().data());
  EXPECT_EQ(pack.candidate().key, LlmPack::open(tiny_pack() / "pack").candidate().key);  // the original is unchanged

  RuntimeFile wider = pack.file();
  wider.runtime.shape.hidden *= 2;
  EXPECT_THROW(pack.with_file(wider), ember::Error);
  RuntimeFile moved = pack.file();
  moved.runtime.sections.back().offset += 256;
  EXPECT_THROW(pack.with_file(moved), ember::Error);
}

TEST(Lfm2Pack, TinyRoundTripBf16) {
  fs::path d = temp_dir("bf16");
  synth_lfm2_checkpoint(lfm2_preset("tiny"), d / "hf", {.seed = 9, .bf16 = true});
  EXPECT_EQ(SafetensorsFile::open(d / "hf/model.safetensors").info("model.embed_tokens.weight").dtype, DType::BF16);
  pack_lfm2(d / "hf", d / "pack");
  check_round_trip(d / "hf", d / "pack");
  fs::remove_all(d);
}

TEST(Lfm2Pack, SeedShapeLayoutEqualsSeed000) {
  fs::path d = temp_dir("seed");
  synth_lfm2_checkpoint(lfm2_preset("seed"), d / "hf", {.seed = 0, .bf16 = true});
  Lfm2PackReport r = pack_lfm2(d / "hf", d / "pack");
  fs::remove_all(d / "hf");
  OrderedJson mine = read_runtime(d / "pack")["runtime"];
  OrderedJson seed = OrderedJson::parse(ember::read_file(fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/seed000_runtime.json"))["runtime"];
  EXPECT_EQ(mine["shape"]["layerTypes"], seed["shape"]["layerTypes"]);
  for (const char* k : {"hidden", "ffn", "vocab", "heads", "kvHeads", "headDim", "convCache", "quantBits", "quantBlock"})
    EXPECT_EQ(mine["shape"][k], seed["shape"][k]) << k;
  EXPECT_EQ(mine["weightBytes"], seed["weightBytes"]);
  ASSERT_EQ(mine["sections"].size(), seed["sections"].size());
  for (size_t i = 0; i < seed["sections"].size(); i++) EXPECT_EQ(mine["sections"][i], seed["sections"][i]) << i;
  for (const char* k : {"maxQueries", "maxPositions", "samplePartials", "planPosition", "maxTotalPositions"}) EXPECT_EQ(mine[k], seed[k]) << k;
  EXPECT_EQ(fs::file_size(d / "pack/weights.bin"), seed["weightBytes"].get<uint64_t>());
  for (const auto& m : r.matrices) EXPECT_LT(m.rel_l2, 0.1) << m.section;
  EXPECT_NO_THROW(LlmPack::open(d / "pack"));
  fs::remove_all(d);
}

TEST(Lfm2Pack, CliSynthPackInspect) {
  fs::path d = temp_dir("cli");
  std::string out;
  ASSERT_EQ(run_ember("synth lfm2 --shape tiny --seed 2 --out " + (d / "hf").string(), &out), 0) << out;
  ASSERT_EQ(run_ember("pack lfm2 --from " + (d / "hf").string() + " --out " + (d / "pack").string(), &out), 0) << out;
  EXPECT_TRUE(contains(out, "L1.attn.qkv")) << out;
  EXPECT_TRUE(contains(out, "rel_l2")) << out;
  ASSERT_EQ(run_ember("inspect --json " + (d / "pack").string(), &out), 0) << out;
  OrderedJson j = OrderedJson::parse(out);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["downWeight"], "mlp.down.quant");
  EXPECT_EQ(j["shape"]["hidden"], 64);
  ASSERT_EQ(run_ember("inspect " + (d / "pack").string(), &out), 0) << out;
  EXPECT_TRUE(contains(out, "valid")) << out;
  EXPECT_TRUE(contains(out, "down weight in use: mlp.down.quant")) << out;
  check_round_trip(d / "hf", d / "pack");
  fs::remove_all(d);
}

TEST(Lfm2Pack, InspectExplainsTheSeedManifest) {
  // The fixture is a runtime.json without weights: inspect reads it and says what is missing.
  fs::path d = temp_dir("seedinspect");
  fs::copy_file(fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/seed000_runtime.json", d / "runtime.json");
  std::string out;
  EXPECT_EQ(run_ember("inspect --json " + d.string(), &out), 1);
  OrderedJson j = OrderedJson::parse(out.substr(0, out.rfind("}") + 1));
  EXPECT_EQ(j["downWeight"], "mlp.down.kquant");
  EXPECT_EQ(j["sections"].size(), 199u);
  EXPECT_EQ(j["problems"].size(), 2u);  // weights.bin and tokenizer.json missing; the table itself is right
  EXPECT_TRUE(contains(j["problems"][0].get<std::string>(), "weights.bin"));
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, TruncatedWeights) {
  fs::path d = damaged_copy("trunc");
  fs::resize_file(d / "weights.bin", fs::file_size(d / "weights.bin") - 1000);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "weights.bin: file size")) << e;
  EXPECT_TRUE(contains(e, "shorter than runtime.weightBytes")) << e;
  EXPECT_TRUE(contains(e, "section ends past the end of weights.bin")) << e;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, MissingSection) {
  fs::path d = damaged_copy("missing");
  OrderedJson j = read_runtime(d);
  auto& secs = j["runtime"]["sections"];
  for (size_t i = 0; i < secs.size(); i++)
    if (secs[i]["name"] == "L1.attn.qkv.scales") secs.erase(i);
  write_runtime(d, j);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "missing section 'L1.attn.qkv.scales'")) << e;
  EXPECT_TRUE(contains(e, "1 problem")) << e;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, OverlappingAndMisalignedSections) {
  fs::path d = damaged_copy("overlap");
  OrderedJson j = read_runtime(d);
  section_named(j, "L0.conv.out_proj.quant")["offset"] = 6144 + 256;  // inside in_proj.scales
  section_named(j, "L0.mlp.down.quant")["offset"] = section_named(j, "L0.mlp.down.quant")["offset"].get<uint64_t>() + 4;
  write_runtime(d, j);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "'L0.conv.out_proj.quant' (byte 6400): overlaps section 'L0.conv.in_proj.scales'")) << e;
  EXPECT_TRUE(contains(e, "'L0.mlp.down.quant' (byte 20484): offset is not 256-aligned")) << e;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, ByteCountsDisagreeWithShape) {
  fs::path d = damaged_copy("bytes");
  OrderedJson j = read_runtime(d);
  section_named(j, "L1.attn.qkv.q_norm")["bytes"] = 128;
  section_named(j, "embed.scales")["offset"] = 0;  // a tied alias that is not the head's bytes
  write_runtime(d, j);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "'L1.attn.qkv.q_norm'")) << e;
  EXPECT_TRUE(contains(e, "byte count disagrees with the shape (f32 1 x 16): expected 64, found 128")) << e;
  EXPECT_TRUE(contains(e, "tied alias must share 'head.scales' exactly")) << e;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, ShapeChangeListsEverySection) {
  fs::path d = damaged_copy("ffn");
  OrderedJson j = read_runtime(d);
  j["runtime"]["shape"]["ffn"] = 160;
  write_runtime(d, j);
  LlmPackCheck c = check_llm_pack(d);
  // gate_up quant/scales, down quant/scales, kquant/kscales for 4 layers.
  size_t disagree = 0;
  for (const auto& p : c.problems.list()) disagree += contains(p.message, "byte count disagrees");
  EXPECT_EQ(disagree, 24u);
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, UnknownLayerTypeAndMalformedJson) {
  fs::path d = damaged_copy("layer");
  OrderedJson j = read_runtime(d);
  j["runtime"]["shape"]["layerTypes"][1] = "mamba";
  write_runtime(d, j);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "runtime.shape.layerTypes[1]: unknown layer type: expected \"conv\" or \"attention\", found \"mamba\"")) << e;
  std::string text = ember::read_file(d / "runtime.json");
  text.insert(text.find("\"hidden\""), "}");
  ember::write_file_atomic(d / "runtime.json", text);
  e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "runtime.json: line ")) << e;
  EXPECT_TRUE(contains(e, "column")) << e;
  EXPECT_TRUE(contains(e, "malformed JSON")) << e;
  std::string out;
  EXPECT_EQ(run_ember("inspect " + d.string(), &out), 1);
  EXPECT_TRUE(contains(out, "malformed JSON")) << out;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, MissingTokenizerAndUnsupportedQuant) {
  fs::path d = damaged_copy("tok");
  fs::remove(d / "tokenizer.json");
  OrderedJson j = read_runtime(d);
  j["runtime"]["shape"]["quantBits"] = 8;
  j["runtime"]["samplePartials"] = 0;
  write_runtime(d, j);
  std::string e = error_of([&] { LlmPack::open(d); });
  EXPECT_TRUE(contains(e, "tokenizer.json: missing")) << e;
  EXPECT_TRUE(contains(e, "runtime.shape.quantBits: unsupported quantization width: expected 4, found 8")) << e;
  EXPECT_TRUE(contains(e, "runtime.samplePartials")) << e;
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, CheckpointMissingTensorLeavesNoOutput) {
  fs::path d = temp_dir("cktmissing");
  SafetensorsFile src = SafetensorsFile::open(tiny_pack() / "hf/model.safetensors");
  std::vector<TensorToWrite> keep;
  for (const auto& [name, info] : src.tensors()) {
    if (name == "model.layers.1.self_attn.k_proj.weight" || name == "model.layers.2.conv.conv.weight") continue;
    auto b = src.bytes(name);
    keep.push_back({name, info.dtype, info.shape, std::vector<uint8_t>(b.begin(), b.end())});
  }
  fs::create_directories(d / "hf");
  write_safetensors(d / "hf/model.safetensors", keep);
  fs::copy_file(tiny_pack() / "hf/config.json", d / "hf/config.json");
  fs::copy_file(tiny_pack() / "hf/tokenizer.json", d / "hf/tokenizer.json");
  std::string out;
  EXPECT_EQ(run_ember("pack lfm2 --from " + (d / "hf").string() + " --out " + (d / "pack").string(), &out), 1);
  EXPECT_TRUE(contains(out, "tensor 'model.layers.1.self_attn.k_proj.weight': missing")) << out;
  EXPECT_TRUE(contains(out, "tensor 'model.layers.2.conv.conv.weight': missing")) << out;
  EXPECT_FALSE(fs::exists(d / "pack"));
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);  // only hf/: no temporaries
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, LyingSafetensorsHeaderLeavesExistingOutputIntact) {
  fs::path d = temp_dir("lying");
  fs::copy(tiny_pack() / "hf", d / "hf");
  fs::copy(tiny_pack() / "pack", d / "pack");
  const std::string before = ember::read_file(d / "pack/runtime.json");
  std::string st = ember::read_file(d / "hf/model.safetensors");
  const std::string entry = "\"model.embedding_norm.weight\":{\"dtype\":\"F32\",\"shape\":[64]";
  size_t at = st.find(entry);
  ASSERT_NE(at, std::string::npos);
  st.replace(at + entry.size() - 3, 2, "65");  // the header now claims 65 floats in a 64-float range
  ember::write_file_atomic(d / "hf/model.safetensors", st);
  std::string out;
  // --force: the old pack may be replaced, but only by a complete new one.
  EXPECT_EQ(run_ember("pack lfm2 --force --from " + (d / "hf").string() + " --out " + (d / "pack").string(), &out), 1);
  EXPECT_TRUE(contains(out, "model.embedding_norm.weight")) << out;
  EXPECT_EQ(ember::read_file(d / "pack/runtime.json"), before);  // the old pack is untouched
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 2);
  fs::remove_all(d);
}

TEST(Lfm2PackErrors, ConfigDisagreesWithTensors) {
  fs::path d = temp_dir("cfg");
  fs::copy(tiny_pack() / "hf", d / "hf");
  OrderedJson cfg = OrderedJson::parse(ember::read_file(d / "hf/config.json"));
  cfg["intermediate_size"] = 256;  // rule gives int(2*256/3)=170 -> 192, tensors have 128
  cfg["num_key_value_heads"] = 4;
  ember::write_file_atomic(d / "hf/config.json", cfg.dump());
  std::string e = error_of([&] { pack_lfm2(d / "hf", d / "pack"); });
  EXPECT_TRUE(contains(e, "config.json: intermediate_size")) << e;
  EXPECT_TRUE(contains(e, "expected 192, found 128")) << e;
  EXPECT_TRUE(contains(e, "config.json: num_key_value_heads: disagrees with the tensor shapes")) << e;
  EXPECT_FALSE(fs::exists(d / "pack"));
  fs::remove_all(d);
}
