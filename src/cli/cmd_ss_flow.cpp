// `ember ss-flow`: TRELLIS sparse-structure flow sampling from a text context to the 8x16^3
// occupancy latent, with a progress bar; the latent is written atomically.
#include <chrono>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/ss_flow_stage.h"
#include "common/error.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_synth.h"
#include "trellis/tensor_files.h"

namespace ember::cli {
namespace {

constexpr int64_t kContextTokens = 77;  // CLIP's text context length

void parse_interval(const std::string& s, trellis::SamplerOptions& o) {
  std::istringstream in(s);
  char comma = 0;
  if (!(in >> o.cfg_lo >> comma >> o.cfg_hi) || comma != ',' || !in.eof())
    throw Error("'" + s + "' is not LO,HI", "--cfg-interval", "e.g. --cfg-interval 0.5,1.0");
}

void progress_bar(const trellis::StepReport& r) {
  const int width = 30, done = (r.step + 1) * width / r.steps;
  std::fprintf(stderr, "\r[%s%s] step %2d/%d  t=%.3f %s %7.1f ms", std::string(size_t(done), '#').c_str(),
               std::string(size_t(width - done), '.').c_str(), r.step + 1, r.steps, r.t, r.guided ? "cfg" : "   ",
               1e3 * r.seconds);
  if (r.step + 1 == r.steps) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

void add_ss_flow_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ss-flow", "TRELLIS sparse-structure flow: text context -> occupancy latent (8x16x16x16)");
  struct Opts {
    GpuOptions gpu;
    std::string stage, cond, neg, out, noise, interval = "0.5,1.0";
    trellis::SamplerOptions sampler;
    uint64_t seed = 0;
    bool synthetic = false;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "the sparseStructureFlow stage directory");
  cmd->add_flag("--synthetic", o->synthetic, "random weights of the seed shape instead of a stage (for testing)");
  cmd->add_option("--cond", o->cond, "text context of the prompt, .npy [77, 768] f32 or f16")->required();
  cmd->add_option("--neg-cond", o->neg, "text context of the empty prompt, .npy [77, 768]")->required();
  cmd->add_option("--steps", o->sampler.steps, "Euler steps")->capture_default_str();
  cmd->add_option("--cfg", o->sampler.cfg_strength, "classifier-free guidance strength")->capture_default_str();
  cmd->add_option("--cfg-interval", o->interval, "guidance where LO <= t <= HI")->capture_default_str();
  cmd->add_option("--rescale-t", o->sampler.rescale_t, "time rescaling r: t' = r t / (1 + (r-1) t)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "noise seed")->capture_default_str();
  cmd->add_option("--noise", o->noise, "start from this noise (.npy [8, 16, 16, 16]) instead of the seeded one");
  cmd->add_option("--out", o->out, "output latent .npy [8, 16, 16, 16] f32")->required();
  cmd->callback([o] {
    parse_interval(o->interval, o->sampler);
    o->sampler.validate();
    if (o->stage.empty() == !o->synthetic) throw Error("give exactly one of --stage DIR and --synthetic", "ember ss-flow");
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<trellis::TensorSource> source;
    if (!o->synthetic) source = open_ss_flow_stage(o->stage);
    const auto config = o->synthetic ? trellis::SsFlowConfig::seed() : trellis::SsFlowConfig::from_tensors(*source);
    // Inputs are checked before weights are made or the GPU is touched.
    auto cond = trellis::read_context(o->cond, kContextTokens, config.cond_channels, "--cond");
    auto neg = trellis::read_context(o->neg, kContextTokens, config.cond_channels, "--neg-cond");
    const size_t n = size_t(config.in_channels * config.tokens());
    auto noise = o->noise.empty() ? trellis::gaussian_noise(o->seed, n)
                                  : trellis::read_latent(o->noise, config.in_channels, config.resolution, "--noise");
    if (o->synthetic) source = std::make_unique<trellis::MemoryTensors>(trellis::synth_ss_flow_seed());
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::SsFlowModel model(kernels, *source, {});
    model.set_context(cond, neg, kContextTokens);
    trellis::FlowSampler sampler(model);
    const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double steps_s = 0;
    auto latent = sampler.sample(noise, o->sampler, [&](const trellis::StepReport& r) {
      steps_s += r.seconds;
      progress_bar(r);
    });
    const int64_t R = config.resolution;
    trellis::write_npy(o->out, {config.out_channels, R, R, R}, latent);
    std::fprintf(stderr, "ss-flow: %d steps in %.3f s (%.1f ms per step; setup %.2f s incl. first-use shader compilation), wrote %s\n",
                 o->sampler.steps, steps_s, 1e3 * steps_s / o->sampler.steps, setup_s, o->out.c_str());
  });
}

}  // namespace ember::cli
