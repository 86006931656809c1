#include "tune/layer_tail.h"

#include "tune/check.h"

namespace ember::tune {

SeparateLayerTail::SeparateLayerTail(gpu::KernelCache& kernels, const formats::LlmShape& shape, const LayerTailMatrices& m)
    : x_bytes_(uint64_t(shape.hidden) * 4),
      proj_(kernels, {.rows = uint32_t(shape.hidden), .cols = m.proj.cols, .variant = m.proj_config.variant, .geometry = m.proj_config.geometry,
                      .mode = kernels::OutputMode::accumulate}),
      gate_up_(kernels, {.rows = uint32_t(shape.ffn), .cols = uint32_t(shape.hidden), .variant = m.gate_up_config.variant,
                         .geometry = m.gate_up_config.geometry, .gated = true, .norm_input = true, .eps = float(shape.eps())}),
      down_(kernels, {.rows = uint32_t(shape.hidden), .cols = uint32_t(shape.ffn), .variant = m.down_config.variant, .geometry = m.down_config.geometry,
                      .mode = kernels::OutputMode::accumulate}) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), CO = m.proj.cols;
  y = device.create_storage(uint64_t(CO) * 4, "tune.y");
  x0_ = device.create_storage(x_bytes_, "tune.x0");
  x = device.create_storage(x_bytes_, "tune.x");
  norm_w = device.create_storage(uint64_t(H) * 4, "tune.norm_w");
  act = device.create_storage(uint64_t(F) * 4, "tune.act");
  device.upload(y, std::span<const float>(random_input(CO, 31)));
  device.upload(x0_, std::span<const float>(random_input(H, 32)));
  device.upload(norm_w, std::span<const float>(random_input(H, 33)));
  proj_b_ = proj_.bind(m.proj, {&y}, {&x});
  gate_up_b_ = gate_up_.bind(m.gate_up, {&x}, {&act}, {&norm_w});
  down_b_ = down_.bind(m.down, {&act}, {&x});
  gpu::Recorder rec(device);
  restart(rec);
  record(rec);
  rec.submit();
  reference_ = device.download_as<float>(x);
}

void SeparateLayerTail::restart(gpu::Recorder& rec) const { rec.copy(x0_, 0, x, 0, x_bytes_); }

void SeparateLayerTail::record(gpu::Recorder& rec) const {
  proj_.record(rec, proj_b_);
  gate_up_.record(rec, gate_up_b_);
  down_.record(rec, down_b_);
}

}  // namespace ember::tune
