// `ember bench text-to-3d`: the text-to-3D pipeline on a prompt, repeated after a warm-up run; each
// stage's median time and the total, as JSON (no files written).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "trellis/text_to_3d.h"

namespace ember::cli {

void add_bench_text_to_3d(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("text-to-3d", "TRELLIS text-to-3D (text encoder, ss-flow, ss-decoder): per-stage and total time");
  struct Opts {
    GpuOptions gpu;
    std::string stages, prompt = "a wooden chair";
    int repeats = 3;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stages", o->stages, "pipeline folder (pipeline.json + stages; `ember synth trellis-pipeline`)")->required();
  cmd->add_option("--prompt", o->prompt)->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "timed runs after one warm-up")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->callback([o] {
    auto config = trellis::read_pipeline_config(o->stages);
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::TextTo3DPipeline pipeline(kernels, config);
    const double open_s = pipeline.times().open_s;
    trellis::TextTo3DRequest req{o->prompt, "", 0, 1, config.sampler};
    std::vector<double> text, flow, decode, total;
    for (int i = 0; i <= o->repeats; i++) {
      trellis::TextTo3DTimes before = pipeline.times();
      const auto t0 = std::chrono::steady_clock::now();
      pipeline.run(req);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto& t = pipeline.times();
      if (i == 0) continue;  // warm-up: first-use shader compilation
      text.push_back(t.text_s - before.text_s);
      flow.push_back(t.flow_s - before.flow_s);
      decode.push_back(t.decode_s - before.decode_s);
      total.push_back(wall);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    nlohmann::json j = {{"bench", "text-to-3d"},
                        {"device", device.adapter().name()},
                        {"stages", o->stages},
                        {"steps", req.sampler.steps},
                        {"repeats", o->repeats},
                        {"open_s", open_s},
                        {"text_encoder_ms", 1e3 * median(text)},
                        {"ss_flow_ms", 1e3 * median(flow)},
                        {"ss_decoder_ms", 1e3 * median(decode)},
                        {"total_ms", 1e3 * median(total)},
                        {"random_weights", !pipeline.random_stages().empty()}};
    std::printf("%s\n", j.dump(2).c_str());
  });
}

}  // namespace ember::cli
