// `ember ss-decode`: TRELLIS sparse-structure decoder, occupancy latent(s) -> logits
// [B, out, 4D, 4H, 4W] (.npy f32, written atomically); occupied voxels are logits > 0.
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "common/error.h"
#include "formats/npy.h"
#include "trellis/ss_decoder.h"
#include "trellis/tensor_files.h"

namespace ember::cli {

void add_ss_decode_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ss-decode", "TRELLIS sparse-structure decoder: latent [B,] 8x16^3 -> occupancy logits [B, 1, 64^3]");
  struct Opts {
    GpuOptions gpu;
    std::string stage, latent, out;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "the sparseStructureDecoder stage directory (`ember pack trellis --stage ss-decoder`)")->required();
  cmd->add_option("--latent", o->latent, "latent .npy [C, D, H, W] or [B, C, D, H, W], f32 or f16 (`ember ss-flow --out`)")->required();
  cmd->add_option("--out", o->out, "output logits .npy [B, out_channels, uD, uH, uW] f32")->required();
  cmd->callback([o] {
    const auto start = std::chrono::steady_clock::now();
    check_new_outputs({{o->out, "--out"}});
    auto stage = trellis::open_ss_decoder_stage(o->stage);
    const auto config = trellis::ss_decoder_config_of(*stage);
    auto z = trellis::read_finite_npy(o->latent, "--latent");
    const std::string fix = "the decoder takes [" + std::to_string(config.latent_channels) + ", D, H, W] or [B, " +
                            std::to_string(config.latent_channels) + ", D, H, W] (ss-flow writes [8, 16, 16, 16])";
    if (z.shape.size() == 4) z.shape.insert(z.shape.begin(), 1);
    if (z.shape.size() != 5 || z.shape[1] != config.latent_channels)
      throw Error("latent of shape " + trellis::shape_text(z.shape) + " where " + std::to_string(config.latent_channels) +
                      " channels were expected", "--latent " + o->latent, fix);
    for (size_t i = 2; i < 5; i++)
      if (z.shape[i] < 1 || z.shape[i] > 64) throw Error("spatial extent " + std::to_string(z.shape[i]) + " outside 1..64", "--latent " + o->latent, fix);
    const int64_t B = z.shape[0];
    if (B < 1) throw Error("empty batch", "--latent " + o->latent, fix);
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::SsDecoderModel model(kernels, *stage, {uint32_t(z.shape[2]), uint32_t(z.shape[3]), uint32_t(z.shape[4])});
    const size_t per = z.values.size() / size_t(B);
    std::vector<float> logits;
    double decode_s = 0;
    size_t occupied = 0;
    for (int64_t b = 0; b < B; b++) {
      const auto t0 = std::chrono::steady_clock::now();
      auto y = model.decode(std::span<const float>(z.values).subspan(size_t(b) * per, per));
      decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (float v : y) occupied += v > 0;
      logits.insert(logits.end(), y.begin(), y.end());
    }
    const auto e = model.output_extent();
    const std::vector<int64_t> shape{B, config.out_channels, e[0], e[1], e[2]};
    formats::write_npy_f32(o->out, shape, logits);
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "ss-decode: %lld latent(s) -> %s in %.3f s (decode %.1f ms each, %.1f GFLOP; total %.2f s), %zu occupied voxels (logits > 0), wrote %s\n",
                 static_cast<long long>(B), trellis::shape_text(shape).c_str(), decode_s, 1e3 * decode_s / double(B),
                 model.flops() / 1e9, total_s, occupied, o->out.c_str());
  });
}

}  // namespace ember::cli
