// Test packs for the LFM2 engine: synthesized Hugging Face checkpoints packed by the real
// converter, and the CPU reference weights dequantized from the pack by the test tree's own
// dequantizer (tests/reference/q4_reference.h), never by the code under test.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "formats/lfm2_checkpoint.h"
#include "formats/lfm2_packer.h"
#include "formats/lfm2_synth.h"
#include "formats/llm_pack.h"
#include "reference/lfm2_reference.h"
#include "reference/q4_reference.h"

namespace ember::test {

// The test packs this process made, removed when it exits: ctest runs every test in a process of
// its own, and a seed-shape pack with its checkpoint is 1.1 GB (left behind, they filled a disk).
struct TestPackDirs {
  std::vector<std::filesystem::path> roots;
  ~TestPackDirs() {
    for (const auto& r : roots) {
      std::error_code ignored;
      std::filesystem::remove_all(r, ignored);
    }
  }
};
inline TestPackDirs& test_pack_dirs() {
  static TestPackDirs dirs;
  return dirs;
}

// Synthesizes `preset` and packs it with the real converter into root/hf and root/pack.
inline std::filesystem::path make_lfm2_test_pack(const std::string& preset, uint64_t seed, const std::filesystem::path& root) {
  formats::Lfm2SynthOptions so;
  so.seed = seed;
  formats::synth_lfm2_checkpoint(formats::lfm2_preset(preset), root / "hf", so);
  formats::pack_lfm2(root / "hf", root / "pack");
  return root / "pack";
}

// The seed-shape pack (1.1 GB with its checkpoint, ~25 s of CPU to make) is made once per build of
// the test binary, next to it in test_cache/<the binary's mtime>/, and shared by the processes
// ctest starts (one per test); a new build's first use removes the older builds' packs. Null when
// the cache cannot be written.
inline std::filesystem::path shared_lfm2_test_pack(const std::string& preset, uint64_t seed) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path cache = exe.parent_path() / "test_cache";
  const fs::path build = cache / std::to_string(fs::last_write_time(exe, ec).time_since_epoch().count());
  const fs::path root = build / (preset + "_" + std::to_string(seed));
  if (fs::exists(root / "pack" / "runtime.json")) return root / "pack";
  if (!fs::create_directories(build, ec) && ec) return {};
  for (const auto& old : fs::directory_iterator(cache, ec))
    if (old.path() != build) fs::remove_all(old.path(), ec);
  // One process makes it while the others wait (the lock goes with the descriptor at exit).
  const int lock = ::open((build / (".lock_" + preset + "_" + std::to_string(seed))).c_str(), O_CREAT | O_RDWR, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return {};
  if (!fs::exists(root / "pack" / "runtime.json")) {
    const fs::path tmp = build / (".making_" + preset + "_" + std::to_string(seed) + "_" + std::to_string(getpid()));
    test_pack_dirs().roots.push_back(tmp);  // gone at exit if making it fails
    make_lfm2_test_pack(preset, seed, tmp);
    fs::rename(tmp, root);
  }
  ::close(lock);
  return root / "pack";
}

// A pack of `preset` ("tiny" or "seed") for `seed`, made once per process (the seed shape: once
// per test binary, see above) in a temp dir (root/hf, root/pack) removed at exit.
inline std::filesystem::path lfm2_test_pack(const std::string& preset, uint64_t seed = 7) {
  namespace fs = std::filesystem;
  if (preset == "seed")
    if (fs::path shared = shared_lfm2_test_pack(preset, seed); !shared.empty()) return shared;
  fs::path root = fs::temp_directory_path() / ("ember_lfm2_" + preset + "_" + std::to_string(seed) + "_" + std::to_string(getpid()));
  fs::path pack = root / "pack";
  if (fs::exists(pack / "runtime.json")) return pack;
  test_pack_dirs().roots.push_back(root);
  return make_lfm2_test_pack(preset, seed, root);
}

// The tiny pack's directory, made once per process (the server tests start `ember serve` on it).
inline std::string tiny_pack_dir() {
  static const std::string dir = lfm2_test_pack("tiny").string();
  return dir;
}

// Copies a pack with candidate fields replaced (e.g. {"mlpPair": true}), into `dir`.
inline std::filesystem::path with_candidate(const std::filesystem::path& pack, const std::filesystem::path& dir,
                                            const nlohmann::json& patch) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"weights.bin", "tokenizer.json"}) fs::create_symlink(fs::absolute(pack / f), dir / f);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(std::ifstream(pack / "runtime.json"));
  for (auto& [k, v] : patch.items()) j["candidate"][k] = v;
  std::ofstream(dir / "runtime.json") << j.dump(2);
  return dir;
}

inline reference::Q4Host q4_from_pack(const formats::LlmPack& p, const std::string& prefix, uint32_t rows, uint32_t cols,
                                      bool kmajor = false) {
  auto words = [&](const std::string& name) {
    auto b = p.section(name);
    std::vector<uint32_t> w(b.size() / 4);
    std::memcpy(w.data(), b.data(), w.size() * 4);
    return w;
  };
  reference::Q4Host m;
  m.rows = rows;
  m.cols = cols;
  m.quant = words(prefix + (kmajor ? ".kquant" : ".quant"));
  auto s = p.section(prefix + (kmajor ? ".kscales" : ".scales"));
  m.scales.resize(s.size() / 4);
  std::memcpy(m.scales.data(), s.data(), s.size());
  if (p.has_section(prefix + ".zero_points")) m.zero_points = words(prefix + ".zero_points");
  return m;
}

// The model the pack holds, as f32 weights for the CPU reference. `down_copy`: "quant" or
// "kquant" (docs/formats.md: the candidate decides which copy is the model).
inline reference::Lfm2Weights reference_weights(const formats::LlmPack& p, const std::string& down_copy) {
  const auto& s = p.shape();
  const uint32_t H = s.hidden, F = s.ffn, V = s.vocab;
  reference::Lfm2Weights w;
  w.shape.hidden = H;
  w.shape.ffn = F;
  w.shape.vocab = V;
  w.shape.heads = s.heads;
  w.shape.kv_heads = s.kv_heads;
  w.shape.head_dim = s.head_dim;
  w.shape.conv_cache = s.conv_cache;
  w.shape.eps = s.eps();
  auto f32 = [&](const std::string& n) {
    auto v = p.f32_section(n);
    return std::vector<float>(v.begin(), v.end());
  };
  for (int i = 0; i < s.layers(); i++) {
    const bool attn = s.layer_types[i] == formats::LayerType::Attention;
    w.shape.attention.push_back(attn);
    const std::string L = formats::layer_prefix(i);
    reference::Lfm2Layer l;
    if (attn) {
      l.operator_norm = f32(L + "attn.qkv.norm");
      l.qkv = reference::dequantize_q4(q4_from_pack(p, L + "attn.qkv", s.qkv_rows(), H));
      l.o_proj = reference::dequantize_q4(q4_from_pack(p, L + "attn.o_proj", H, s.q_rows()));
      l.q_norm = f32(L + "attn.qkv.q_norm");
      l.k_norm = f32(L + "attn.qkv.k_norm");
    } else {
      l.operator_norm = f32(L + "conv.in_proj.norm");
      l.in_proj = reference::dequantize_q4(q4_from_pack(p, L + "conv.in_proj", 3 * H, H));
      l.out_proj = reference::dequantize_q4(q4_from_pack(p, L + "conv.out_proj", H, H));
      l.taps = f32(L + "conv.core.taps");
    }
    l.ffn_norm = f32(L + "mlp.gate_up.norm");
    l.gate_up = reference::dequantize_q4(q4_from_pack(p, L + "mlp.gate_up", 2 * F, H));
    if (down_copy == "kquant")  // stored [ffn][hidden]: transpose back to [hidden][ffn]
      l.down = reference::transpose(reference::dequantize_q4(q4_from_pack(p, L + "mlp.down", F, H, true)), F, H);
    else
      l.down = reference::dequantize_q4(q4_from_pack(p, L + "mlp.down", H, F));
    w.layers.push_back(std::move(l));
  }
  w.embed = reference::dequantize_q4(q4_from_pack(p, "head", V, H));
  w.final_norm = f32("head.norm");
  w.rope_cos = f32("rope.cos_ext");
  w.rope_sin = f32("rope.sin_ext");
  w.rope_positions = static_cast<int>(w.rope_cos.size() / (s.head_dim / 2));
  return w;
}

}  // namespace ember::test
