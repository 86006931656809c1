// Test helpers for the q4 kernels: a CPU-quantized matrix uploaded to the device, one buffer per
// part as the pack loader binds them.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "gpu_fixture.h"
#include "kernels/q4_matrix.h"
#include "reference/q4_reference.h"

namespace ember::test {

struct DeviceQ4 {
  gpu::Buffer quant, scales, zero_points;
  kernels::Q4Matrix matrix;
};

inline DeviceQ4 upload_q4(const reference::Q4Host& m, const std::string& name = "w") {
  auto& dev = test_device();
  DeviceQ4 d;
  d.quant = dev.create_storage(m.quant.size() * 4, name + ".quant");
  dev.upload(d.quant, std::span<const uint32_t>(m.quant));
  d.scales = dev.create_storage(m.scales.size() * 4, name + ".scales");
  dev.upload(d.scales, std::span<const float>(m.scales));
  d.matrix = {.quant = {&d.quant}, .scales = {&d.scales}, .rows = m.rows, .cols = m.cols};
  if (m.asymmetric()) {
    std::vector<uint32_t> zp = m.zero_points;
    zp.resize((zp.size() + 3) / 4 * 4, 0);  // keep the buffer a multiple of 16 bytes
    d.zero_points = dev.create_storage(zp.size() * 4, name + ".zero_points");
    dev.upload(d.zero_points, std::span<const uint32_t>(zp));
    d.matrix.zero_points = {&d.zero_points};
  }
  return d;
}

// Symmetric matrices in one buffer, each part at a 256-byte aligned place, as the pack loader
// places a model's weights (kernels that bind several matrices as one range need that).
struct DeviceQ4Set {
  gpu::Buffer buffer;
  std::vector<kernels::Q4Matrix> matrices;
};

inline DeviceQ4Set upload_q4_together(const std::vector<const reference::Q4Host*>& ms, const std::string& name = "weights") {
  auto& dev = test_device();
  auto place = [](uint64_t bytes) { return (bytes + 255) / 256 * 256; };
  uint64_t size = 0;
  for (const auto* m : ms) size += place(m->quant.size() * 4) + place(m->scales.size() * 4);
  DeviceQ4Set d;
  d.buffer = dev.create_storage(size, name);
  uint64_t at = 0;
  for (const auto* m : ms) {
    const uint64_t q = at, s = q + place(m->quant.size() * 4);
    dev.upload(d.buffer, std::span<const uint32_t>(m->quant), q);
    dev.upload(d.buffer, std::span<const float>(m->scales), s);
    d.matrices.push_back({.quant = {&d.buffer, q, m->quant.size() * 4}, .scales = {&d.buffer, s, m->scales.size() * 4}, .rows = m->rows, .cols = m->cols});
    at = s + place(m->scales.size() * 4);
  }
  return d;
}

inline gpu::Buffer upload_floats(const std::vector<float>& v, const std::string& name) {
  auto& dev = test_device();
  gpu::Buffer b = dev.create_storage(v.size() * 4, name);
  dev.upload(b, std::span<const float>(v));
  return b;
}

}  // namespace ember::test
