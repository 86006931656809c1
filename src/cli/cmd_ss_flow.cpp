// `ember ss-flow`: TRELLIS sparse-structure flow sampling from a text context to the 8x16^3
// occupancy latent, with a progress bar; the latent (and with --dump-velocity every step's guided
// velocity) is written atomically. The context comes from .npy files (--cond, --neg-cond) or from
// prompts run through the text encoder stage in the same process (--text-stage, --prompt).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "cli/ss_flow_source.h"
#include "common/error.h"
#include "formats/npy.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/tensor_files.h"
#include "trellis/text_encoder.h"

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
  const std::string sample = r.samples > 1 ? "sample " + std::to_string(r.sample + 1) + "/" + std::to_string(r.samples) + " " : "";
  std::fprintf(stderr, "\r%s[%s%s] step %2d/%d  t=%.3f %s %7.1f ms", sample.c_str(), std::string(size_t(done), '#').c_str(),
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
    std::string cond, neg, out, noise, dump_velocity, interval = "0.5,1.0", text_stage, prompt, negative_prompt;
    trellis::SamplerOptions sampler;
    int64_t seed = 0;
    int64_t samples = 0;  // 0: as many as the inputs hold
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  o->source.add_to(*cmd);
  auto* cond = cmd->add_option("--cond", o->cond,
                               "text context of the prompt, .npy [B, 77, 768] or [77, 768] (repeats over the batch), f32 or f16");
  auto* neg = cmd->add_option("--neg-cond", o->neg, "text context of the empty prompt, .npy [B, 77, 768] or [77, 768]");
  auto* text_stage = cmd->add_option("--text-stage", o->text_stage,
                                     "the textEncoder stage: encode --prompt (and --negative-prompt) here instead of --cond/--neg-cond");
  auto* prompt = cmd->add_option("--prompt", o->prompt, "with --text-stage: the prompt");
  auto* negative = cmd->add_option("--negative-prompt", o->negative_prompt,
                                   "with --text-stage: the unconditional prompt (default \"\", as TRELLIS)");
  text_stage->excludes(cond)->excludes(neg);
  prompt->needs(text_stage);
  negative->needs(text_stage);
  cmd->add_option("--steps", o->sampler.steps, "Euler steps")->capture_default_str();
  cmd->add_option("--cfg", o->sampler.cfg_strength, "classifier-free guidance strength")->capture_default_str();
  cmd->add_option("--cfg-interval", o->interval, "guidance where LO <= t <= HI")->capture_default_str();
  cmd->add_option("--rescale-t", o->sampler.rescale_t, "time rescaling r: t' = r t / (1 + (r-1) t)")->capture_default_str();
  add_seed_option(*cmd, o->seed, "noise seed (-1: a random one, printed)")->capture_default_str();
  cmd->add_option("--samples", o->samples,
                  "latents to sample (B); seeded noise for B draws B latents, the first the one --seed alone draws "
                  "(default: the batch of --noise, else of --cond / --neg-cond, else 1)");
  cmd->add_option("--noise", o->noise, "start from this noise (.npy [B, 8, 16, 16, 16] or [8, 16, 16, 16], f32 or f16) instead of the seeded one");
  cmd->add_option("--dump-velocity", o->dump_velocity,
                  "also write the velocity after guidance of every step, .npy [steps, B, 8, 16, 16, 16] f32");
  cmd->add_option("--out", o->out, "output latents .npy [B, 8, 16, 16, 16] f32 (the batch axis also for B = 1, as upstream's sample())")
      ->required();
  cmd->callback([o, prompt] {
    if (o->text_stage.empty() && (o->cond.empty() || o->neg.empty()))
      throw Error("give --cond and --neg-cond (.npy contexts), or --text-stage DIR with --prompt TEXT", "ember ss-flow");
    if (!o->text_stage.empty() && prompt->count() == 0) throw Error("--text-stage needs --prompt TEXT", "ember ss-flow");
    parse_interval(o->interval, o->sampler);
    o->sampler.validate();
    const auto start = std::chrono::steady_clock::now();
    check_output_path(o->out, "--out");
    if (!o->dump_velocity.empty()) check_output_path(o->dump_velocity, "--dump-velocity");
    if (o->samples < 0) throw Error("--samples " + std::to_string(o->samples) + " is negative", "--samples", "give B >= 1");
    const auto config = o->source.open("ember ss-flow");
    const int64_t R = config.resolution;
    // Inputs are checked before weights are made or the GPU is touched.
    // With --text-stage the encoder gives one context and one negative context for every latent.
    int64_t cond_b = 1, neg_b = 1, noise_b = 0;
    std::vector<float> cond, neg, noise;
    if (o->text_stage.empty()) {
      cond = trellis::read_batch(o->cond, {kContextTokens, config.cond_channels}, "--cond", cond_b);
      neg = trellis::read_batch(o->neg, {kContextTokens, config.cond_channels}, "--neg-cond", neg_b);
    }
    if (!o->noise.empty()) noise = trellis::read_batch(o->noise, {config.in_channels, R, R, R}, "--noise", noise_b);
    const int64_t B = noise_b ? noise_b : o->samples ? o->samples : std::max(cond_b, neg_b);
    if (noise_b && o->samples && o->samples != noise_b)
      throw Error("--samples " + std::to_string(o->samples) + " but the noise holds " + std::to_string(noise_b) + " latent(s)",
                  "--noise " + o->noise, "leave out --samples, or give noise of that batch");
    for (auto [batch, what, path] : {std::tuple{cond_b, "--cond", o->cond}, std::tuple{neg_b, "--neg-cond", o->neg}})
      if (batch != 1 && batch != B)
        throw Error("a batch of " + std::to_string(batch) + " contexts for " + std::to_string(B) + " latent(s)",
                    std::string(what) + " " + path, "give one context for every latent, or one [77, C] context for all");
    if (o->noise.empty()) noise = trellis::gaussian_noise(resolve_seed(o->seed, "ember ss-flow"), size_t(B * config.in_channels * config.tokens()));
    auto source = o->source.take_tensors();
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    if (!o->text_stage.empty()) {
      trellis::TextEncoder encoder(kernels, o->text_stage);
      if (encoder.context_length() != kContextTokens || encoder.width() != config.cond_channels)
        throw Error("the text encoder makes [" + std::to_string(encoder.context_length()) + ", " + std::to_string(encoder.width()) +
                        "] contexts, the ss-flow stage takes [" + std::to_string(kContextTokens) + ", " +
                        std::to_string(config.cond_channels) + "]",
                    "--text-stage " + o->text_stage, "use the text encoder of the same TRELLIS pipeline");
      std::vector<bool> truncated;
      auto ids = encoder.tokenize({o->prompt, o->negative_prompt}, &truncated);
      for (size_t i = 0; i < 2; i++)
        if (truncated[i])
          std::fprintf(stderr, "ember: note: the %s is longer than %d tokens and was truncated to fit, as TRELLIS's tokenizer call does\n",
                       i == 0 ? "prompt" : "negative prompt", encoder.context_length());
      auto both = encoder.encode_ids(ids);
      const size_t half = both.size() / 2;
      cond.assign(both.begin(), both.begin() + std::ptrdiff_t(half));
      neg.assign(both.begin() + std::ptrdiff_t(half), both.end());
    }
    trellis::SsFlowModel model(kernels, *source, o->source.options_for(device.adapter()));
    trellis::FlowSampler sampler(model);
    const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double steps_s = 0;
    std::vector<float> velocities;
    auto latent = sampler.sample_batch(
        noise, cond, neg, kContextTokens, o->sampler,
        [&](const trellis::StepReport& r) {
          steps_s += r.seconds;
          progress_bar(r);
        },
        nullptr, o->dump_velocity.empty() ? nullptr : &velocities);
    const std::vector<int64_t> shape{B, config.out_channels, R, R, R};
    write_output_file(formats::npy_output(o->out, "--out"), [&](const std::filesystem::path& tmp) { formats::write_npy_f32(tmp, shape, latent); });
    if (!o->dump_velocity.empty()) {
      std::vector<int64_t> vshape = shape;
      vshape.insert(vshape.begin(), o->sampler.steps);
      write_output_file(formats::npy_output(o->dump_velocity, "--dump-velocity"),
                        [&](const std::filesystem::path& tmp) { formats::write_npy_f32(tmp, vshape, velocities); });
    }
    const int64_t steps = o->sampler.steps * B;
    std::fprintf(stderr,
                 "ss-flow: %lld latent(s), %lld steps in %.3f s (%.1f ms per step; setup %.2f s incl. first-use shader compilation), "
                 "wrote %s%s%s\n",
                 static_cast<long long>(B), static_cast<long long>(steps), steps_s, 1e3 * steps_s / double(steps), setup_s,
                 o->out.c_str(), o->dump_velocity.empty() ? "" : " and ", o->dump_velocity.c_str());
  });
}

}  // namespace ember::cli
