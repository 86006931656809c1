// `ember ss-flow-forward`: one forward of the TRELLIS sparse-structure flow model on given inputs,
// no sampler: the number to compare with `model(x, 1000 * t, cond)` in PyTorch.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/ss_flow_source.h"
#include "common/error.h"
#include "formats/npy.h"
#include "trellis/ss_flow.h"
#include "trellis/tensor_files.h"

namespace ember::cli {
namespace {

std::vector<double> parse_times(const std::string& s) {
  std::vector<double> t;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(v))
      throw Error("'" + item + "' is not a finite number", "--t", "give t in [0, 1], or one per batch row: --t 0.5,0.9");
    t.push_back(v);
  }
  if (t.empty()) throw Error("no time given", "--t", "e.g. --t 0.5");
  return t;
}

}  // namespace

void add_ss_flow_forward_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ss-flow-forward", "one forward of the TRELLIS sparse-structure flow model (no sampler): x, t, cond -> velocity");
  struct Opts {
    GpuOptions gpu;
    SsFlowSource source;
    std::string x, t, cond, out;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  o->source.add_to(*cmd);
  cmd->add_option("--x", o->x, "latents, .npy [B, 8, 16, 16, 16] (or [8, 16, 16, 16] for B = 1), f32 or f16")->required();
  cmd->add_option("--t", o->t,
                  "flow time t (the model is called with 1000 t, as TRELLIS's sampler does); one value, or B comma-separated")
      ->required();
  cmd->add_option("--cond", o->cond, "text context, .npy [B, 77, 768], or [77, 768] for every row")->required();
  cmd->add_option("--out", o->out, "output velocity .npy, the shape of --x, f32")->required();
  cmd->callback([o] {
    check_output_path(o->out, "--out");
    const auto c = o->source.open("ember ss-flow-forward");
    const int64_t R = c.resolution, N = c.tokens(), Cin = c.in_channels, Cc = c.cond_channels;
    // Inputs first: shapes, dtypes, finiteness, batch agreement.
    const trellis::FloatArray x = trellis::read_finite_npy(o->x, "--x");
    const std::vector<int64_t> latent{Cin, R, R, R};
    int64_t B = 1;
    if (x.shape.size() == 5 && std::vector<int64_t>(x.shape.begin() + 1, x.shape.end()) == latent && x.shape[0] >= 1) {
      B = x.shape[0];
    } else if (x.shape != latent) {
      std::vector<int64_t> batched = latent;
      batched.insert(batched.begin(), 1);
      throw Error("shape " + trellis::shape_text(x.shape) + " is not a batch of latents " + trellis::shape_text(latent),
                  "--x " + o->x, "give [B, " + std::to_string(Cin) + ", " + std::to_string(R) + ", " + std::to_string(R) + ", " +
                                     std::to_string(R) + "], e.g. " + trellis::shape_text(batched));
    }
    const trellis::FloatArray cond = trellis::read_finite_npy(o->cond, "--cond");
    const bool shared_cond = cond.shape.size() == 2;
    const bool cond_ok = (shared_cond && cond.shape[1] == Cc && cond.shape[0] >= 1) ||
                         (cond.shape.size() == 3 && cond.shape[0] == B && cond.shape[2] == Cc && cond.shape[1] >= 1);
    if (!cond_ok)
      throw Error("shape " + trellis::shape_text(cond.shape) + " does not fit " + std::to_string(B) + " latent(s) and " +
                      std::to_string(Cc) + " context channels",
                  "--cond " + o->cond,
                  "give [" + std::to_string(B) + ", tokens, " + std::to_string(Cc) + "] (77 tokens for TRELLIS's CLIP), or [tokens, " +
                      std::to_string(Cc) + "] for every row");
    const int64_t L = shared_cond ? cond.shape[0] : cond.shape[1];
    std::vector<double> t = parse_times(o->t);
    if (t.size() == 1) t.assign(size_t(B), t[0]);
    if (int64_t(t.size()) != B)
      throw Error(std::to_string(t.size()) + " times for " + std::to_string(B) + " latents", "--t", "give one value, or one per batch row");

    auto source = o->source.take_tensors();
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::SsFlowModel model(kernels, *source, o->source.options_for(device.adapter()));
    // The engine runs batch 1 or 2 (a conditional and an unconditional row); larger batches go
    // through in pairs.
    std::vector<float> v;
    v.reserve(x.values.size());
    const size_t latent_n = size_t(Cin * N), ctx_n = size_t(L * Cc);
    auto ctx_of = [&](int64_t b) {
      return std::span<const float>(cond.values).subspan(shared_cond ? 0 : size_t(b) * ctx_n, ctx_n);
    };
    for (int64_t b0 = 0; b0 < B; b0 += 2) {
      const int64_t nb = std::min<int64_t>(2, B - b0);
      model.set_context(ctx_of(b0), nb == 2 ? ctx_of(b0 + 1) : std::span<const float>(), L);
      std::vector<float> xs(x.values.begin() + std::ptrdiff_t(size_t(b0) * latent_n),
                            x.values.begin() + std::ptrdiff_t(size_t(b0 + nb) * latent_n));
      auto out = model.forward(xs, std::vector<double>(t.begin() + b0, t.begin() + b0 + nb));
      v.insert(v.end(), out.begin(), out.end());
    }
    std::vector<int64_t> shape = x.shape;
    shape[shape.size() - 4] = c.out_channels;
    write_output_file(formats::npy_output(o->out, "--out"), [&](const std::filesystem::path& tmp) { formats::write_npy_f32(tmp, shape, v); });
    std::fprintf(stderr, "ss-flow-forward: %lld latent(s), %lld context tokens, wrote %s %s\n", static_cast<long long>(B),
                 static_cast<long long>(L), o->out.c_str(), trellis::shape_text(shape).c_str());
  });
}

}  // namespace ember::cli
