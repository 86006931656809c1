// `ember bench text-encoder`: the CLIP text encoder stage on one prompt and on a batch of 8; medians
// of repeats after a warm-up (wall time of encode(), prompts to host floats), per-kernel GPU time.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "gpu/profiler.h"
#include "trellis/clip_checkpoint.h"
#include "trellis/stage_tensors.h"
#include "trellis/text_encoder.h"

namespace ember::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

void add_bench_text_encoder(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("text-encoder", "TRELLIS text encoder (CLIP ViT-L/14 text model): one prompt and a batch of 8");
  struct Opts {
    GpuOptions gpu;
    std::string stage, shape = "vit-l14";
    bool synthetic = false, json = false;
    int repeats = 10;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "a textEncoder stage directory");
  cmd->add_flag("--synthetic", o->synthetic, "random weights (in memory) instead of a stage");
  cmd->add_option("--shape", o->shape, "with --synthetic: vit-l14 or tiny")->check(CLI::IsMember({"vit-l14", "tiny"}))->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "timed repeats after one warm-up")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    if (o->stage.empty() == !o->synthetic) throw Error("give exactly one of --stage DIR and --synthetic", "ember bench text-encoder");
    o->gpu.device.profiling = true;
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    const auto t_load = std::chrono::steady_clock::now();
    std::unique_ptr<trellis::TextEncoder> enc;
    if (o->synthetic) {
      const auto c = o->shape == "tiny" ? formats::clip_tiny_text_config() : formats::clip_vit_l14_text_config();
      auto tensors = std::make_unique<trellis::MemoryTensors>(
          trellis::encode_stage_tensors(formats::synth_clip_text_weights(c, 1), formats::clip_text_tensor_shapes(c)));
      enc = std::make_unique<trellis::TextEncoder>(kernels, std::move(tensors), c, trellis::synth_clip_tokenizer_json(c));
    } else {
      enc = std::make_unique<trellis::TextEncoder>(kernels, o->stage);
    }
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
    const auto& c = enc->config();
    nlohmann::json j = {{"device", device.adapter().to_json()}, {"repeats", o->repeats}, {"statistic", "median"}, {"load_s", load_s},
                        {"config", {{"layers", c.num_hidden_layers}, {"hidden", c.hidden_size}, {"heads", c.num_attention_heads},
                                    {"mlp", c.intermediate_size}, {"context", c.max_position_embeddings}, {"vocab", c.vocab_size}}}};
    std::string text;
    const std::vector<std::string> pool = {"a red wooden chair shaped like an avocado", "a small robot toy", "an old castle on a rock",
                                           "a blue metal helmet", "a green vase with a tree", "a large ship", "a cat", ""};
    for (int batch : {1, 8}) {
      std::vector<std::string> prompts(pool.begin(), pool.begin() + batch);
      enc->encode(prompts);  // warm-up: compiles pipelines, builds the batch's graph
      std::vector<double> wall;
      for (int r = 0; r < o->repeats; r++) {
        const auto s = std::chrono::steady_clock::now();
        enc->encode(prompts);
        wall.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
      }
      gpu::Profiler prof(device, 1024);
      std::vector<double> gpu_ms;
      const auto ids = enc->tokenize(prompts);
      for (int r = 0; r < std::max(1, o->repeats / 2); r++) {
        prof.clear_summary();
        enc->encode_ids(ids, &prof);
        double total = 0;
        for (const auto& reg : prof.collect()) total += reg.ms();
        gpu_ms.push_back(total);
      }
      const double ms = median(wall), flops = enc->flops(batch);
      const std::string key = batch == 1 ? "one_prompt" : "batch8";
      j[key] = {{"prompts", batch}, {"wall_ms", ms}, {"gpu_kernels_ms", median(gpu_ms)}, {"gflop", flops / 1e9},
                {"tflops_wall", flops / (ms / 1e3) / 1e12}, {"kernels", prof.to_json()}};
      char line[256];
      snprintf(line, sizeof line, "%d prompt%s: %.3f ms wall (encode: tokenize, embed, GPU, read back), %.3f ms summed kernel time, %.1f GFLOP\n",
               batch, batch == 1 ? "" : "s", ms, median(gpu_ms), flops / 1e9);
      text += line + prof.table() + "\n";
    }
    if (o->json)
      std::printf("%s\n", j.dump(2).c_str());
    else
      std::printf("device: %s\n%s", device.adapter().name().c_str(), text.c_str());
  });
}

}  // namespace ember::cli
