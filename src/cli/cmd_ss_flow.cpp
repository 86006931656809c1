// `ember ss-flow`: TRELLIS sparse-structure flow sampling from a text context to the 8x16^3
// occupancy latent, with a progress bar; the latent (and with --dump-velocity every step's guided
// velocity) is written atomically.
#include <chrono>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/ss_flow_source.h"
#include "common/error.h"
#include "formats/npy.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
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
    SsFlowSource source;
    std::string cond, neg, out, noise, dump_velocity, interval = "0.5,1.0";
    trellis::SamplerOptions sampler;
    int64_t seed = 0;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  o->source.add_to(*cmd);
  cmd->add_option("--cond", o->cond, "text context of the prompt, .npy [77, 768] f32 or f16")->required();
  cmd->add_option("--neg-cond", o->neg, "text context of the empty prompt, .npy [77, 768]")->required();
  cmd->add_option("--steps", o->sampler.steps, "Euler steps")->capture_default_str();
  cmd->add_option("--cfg", o->sampler.cfg_strength, "classifier-free guidance strength")->capture_default_str();
  cmd->add_option("--cfg-interval", o->interval, "guidance where LO <= t <= HI")->capture_default_str();
  cmd->add_option("--rescale-t", o->sampler.rescale_t, "time rescaling r: t' = r t / (1 + (r-1) t)")->capture_default_str();
  add_seed_option(*cmd, o->seed, "noise seed")->capture_default_str();
  cmd->add_option("--noise", o->noise, "start from this noise (.npy [8, 16, 16, 16] f32 or f16) instead of the seeded one");
  cmd->add_option("--dump-velocity", o->dump_velocity,
                  "also write the velocity after guidance of every step, .npy [steps, 8, 16, 16, 16] f32");
  cmd->add_option("--out", o->out, "output latent .npy [8, 16, 16, 16] f32")->required();
  cmd->callback([o] {
    parse_interval(o->interval, o->sampler);
    o->sampler.validate();
    const auto start = std::chrono::steady_clock::now();
    check_output_path(o->out, "--out");
    if (!o->dump_velocity.empty()) check_output_path(o->dump_velocity, "--dump-velocity");
    const auto config = o->source.open("ember ss-flow");
    // Inputs are checked before weights are made or the GPU is touched.
    auto cond = trellis::read_context(o->cond, kContextTokens, config.cond_channels, "--cond");
    auto neg = trellis::read_context(o->neg, kContextTokens, config.cond_channels, "--neg-cond");
    const size_t n = size_t(config.in_channels * config.tokens());
    auto noise = o->noise.empty() ? trellis::gaussian_noise(resolve_seed(o->seed, "ember ss-flow"), n)
                                  : trellis::read_latent(o->noise, config.in_channels, config.resolution, "--noise");
    auto source = o->source.take_tensors();
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::SsFlowModel model(kernels, *source, {});
    model.set_context(cond, neg, kContextTokens);
    trellis::FlowSampler sampler(model);
    const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double steps_s = 0;
    std::vector<float> velocities;
    auto latent = sampler.sample(
        noise, o->sampler,
        [&](const trellis::StepReport& r) {
          steps_s += r.seconds;
          progress_bar(r);
        },
        nullptr, o->dump_velocity.empty() ? nullptr : &velocities);
    const int64_t R = config.resolution;
    const std::vector<int64_t> shape{config.out_channels, R, R, R};
    write_output_file(formats::npy_output(o->out, "--out"), [&](const std::filesystem::path& tmp) { formats::write_npy_f32(tmp, shape, latent); });
    if (!o->dump_velocity.empty()) {
      std::vector<int64_t> vshape = shape;
      vshape.insert(vshape.begin(), o->sampler.steps);
      write_output_file(formats::npy_output(o->dump_velocity, "--dump-velocity"),
                        [&](const std::filesystem::path& tmp) { formats::write_npy_f32(tmp, vshape, velocities); });
    }
    std::fprintf(stderr, "ss-flow: %d steps in %.3f s (%.1f ms per step; setup %.2f s incl. first-use shader compilation), wrote %s%s%s\n",
                 o->sampler.steps, steps_s, 1e3 * steps_s / o->sampler.steps, setup_s, o->out.c_str(),
                 o->dump_velocity.empty() ? "" : " and ", o->dump_velocity.c_str());
  });
}

}  // namespace ember::cli
