// Benchmark (not a test): packing the seed-000-shape LFM2 from safetensors, and validating the
// pack. Prints JSON. Usage: bench_lfm2_pack [parent_dir] [repeats] (works in a folder of its own there)
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "formats/lfm2_packer.h"
#include "formats/lfm2_synth.h"
#include "formats/llm_pack.h"

namespace fs = std::filesystem;
using namespace ember::formats;

namespace {

double seconds(const std::function<void()>& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median_of(int repeats, const std::function<void()>& fn) {
  fn();  // warm-up (page cache, allocator)
  std::vector<double> t;
  for (int i = 0; i < repeats; i++) t.push_back(seconds(fn));
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  // A folder of this run's own inside the one given, so the bench removes only what it made.
  const fs::path base = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path();
  const fs::path work = base / ("ember_bench_lfm2-" + std::to_string(::getpid()));
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 3;
  fs::create_directories(work);
  // Each repeat replaces the pack the one before wrote (ember's own output of that kind).
  ember::OutputTarget pack_out(work / "pack");
  pack_out.kind = llm_pack_output();
  pack_out.force = true;
  const Lfm2Config seed = lfm2_preset("seed");
  double synth_f32 = seconds([&] { synth_lfm2_checkpoint(seed, work / "hf_f32", {.seed = 0}); });
  double synth_bf16 = seconds([&] { synth_lfm2_checkpoint(seed, work / "hf_bf16", {.seed = 0, .bf16 = true}); });
  std::clock_t c0 = std::clock();
  double pack_once = seconds([&] { pack_lfm2(work / "hf_f32", pack_out); });
  double pack_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;  // all threads
  double pack_f32 = median_of(repeats, [&] { pack_lfm2(work / "hf_f32", pack_out); });
  double pack_bf16 = median_of(repeats, [&] { pack_lfm2(work / "hf_bf16", pack_out); });
  double check = median_of(repeats * 10, [&] {
    if (!check_llm_pack(work / "pack").ok()) throw std::runtime_error("pack does not validate");
  });
  double open = median_of(repeats * 10, [&] { LlmPack::open(work / "pack"); });
  double open_read = median_of(repeats, [&] {  // open and touch every byte (page cache warm)
    LlmPack p = LlmPack::open(work / "pack");
    uint64_t sum = 0;
    for (uint8_t b : p.weights()) sum += b;
    if (sum == 1) std::printf(" ");
  });
  const double params = 229.7e6;  // seed-000 shape: embeddings 67.1M + 8 conv x 12.0M + 6 attention x 11.0M
  std::printf(
      "{\"bench\": \"lfm2_pack\", \"shape\": \"seed000\", \"cores\": %u, \"repeats\": %d,\n"
      " \"synth_f32_s\": %.3f, \"synth_bf16_s\": %.3f,\n"
      " \"pack_from_f32_first_s\": %.3f, \"pack_from_f32_first_cpu_s\": %.3f, \"pack_from_f32_s\": %.3f, \"pack_from_bf16_s\": %.3f, \"weights_bytes\": %llu,\n"
      " \"validate_s\": %.6f, \"open_s\": %.6f, \"open_and_read_all_s\": %.3f,\n"
      " \"pack_params_per_s\": %.3g}\n",
      std::thread::hardware_concurrency(), repeats, synth_f32, synth_bf16, pack_once, pack_cpu, pack_f32, pack_bf16,
      static_cast<unsigned long long>(fs::file_size(work / "pack/weights.bin")), check, open, open_read, params / pack_f32);
  fs::remove_all(work);
  return 0;
}
