#include "trellis/stage_upload.h"

#include <vector>

#include "common/error.h"

namespace ember::trellis {

gpu::Buffer upload_bytes(const gpu::Device& device, std::span<const uint8_t> bytes, const std::string& label) {
  const uint64_t size = (bytes.size() + 3) / 4 * 4;
  gpu::Buffer b = device.create_storage(size < 16 ? 16 : size, label);
  if (bytes.size() % 4 == 0) {
    device.upload(b, 0, bytes);
  } else {
    std::vector<uint8_t> padded(bytes.begin(), bytes.end());
    padded.resize(size, 0);
    device.upload(b, 0, padded);
  }
  return b;
}

namespace {

void check_linear(const TensorView& w, const TensorView& bias) {
  if (!w.quantized) throw Error("expected a symmetric-quantized matrix, found a raw tensor", "tensor " + w.name);
  if (bias.quantized || bias.shape.size() != 1 || bias.shape[0] != w.rows)
    throw Error("bias must be a raw f16 vector of " + std::to_string(w.rows) + " values", "tensor " + bias.name);
  if (int64_t(w.data.size()) != w.padded_rows * w.padded_columns ||
      int64_t(w.scales.size()) != w.padded_rows * (w.padded_columns / kQuantGroup) * 2)
    throw Error("data or scales size does not match the padded shape", "tensor " + w.name, "repack the stage");
}

}  // namespace

kernels::QuantizedMatrix upload_linear(const gpu::Device& device, const TensorView& w, const TensorView& bias) {
  check_linear(w, bias);
  kernels::QuantizedMatrix m;
  m.data = upload_bytes(device, w.data, w.name);
  m.scales = upload_bytes(device, w.scales, w.name + " scales");
  m.bias = upload_bytes(device, bias.data, bias.name);
  m.rows = uint32_t(w.rows);
  m.cols = uint32_t(w.columns);
  m.padded_rows = uint32_t(w.padded_rows);
  m.padded_cols = uint32_t(w.padded_columns);
  return m;
}

kernels::QuantizedMatrix upload_stacked_linears(const gpu::Device& device, const std::vector<LinearView>& parts, const std::string& label) {
  if (parts.empty()) throw Error("no matrices to stack", label);
  const TensorView& first = parts.front().weight;
  uint64_t data = 0, scales = 0, bias = 0;
  for (const auto& [w, b] : parts) {
    check_linear(w, b);
    if (w.rows != w.padded_rows || w.padded_columns != first.padded_columns || w.columns != first.columns)
      throw Error("stacked matrices need whole 16-row tiles and the same columns", "tensor " + w.name,
                  "rows " + std::to_string(w.rows) + " x columns " + std::to_string(w.columns) + ", the first " +
                      std::to_string(first.rows) + " x " + std::to_string(first.columns));
    data += w.data.size();
    scales += w.scales.size();
    bias += b.data.size();
  }
  kernels::QuantizedMatrix m;
  m.data = device.create_storage(data, label);
  m.scales = device.create_storage(scales, label + " scales");
  m.bias = device.create_storage(bias, label + " bias");
  uint64_t at_data = 0, at_scales = 0, at_bias = 0;
  for (const auto& [w, b] : parts) {  // tile-major: one matrix's tiles after the other's (rows stack)
    device.upload(m.data, at_data, w.data);
    device.upload(m.scales, at_scales, w.scales);
    device.upload(m.bias, at_bias, b.data);
    at_data += w.data.size();
    at_scales += w.scales.size();
    at_bias += b.data.size();
    m.rows += uint32_t(w.rows);
  }
  m.padded_rows = m.rows;
  m.cols = uint32_t(first.columns);
  m.padded_cols = uint32_t(first.padded_columns);
  return m;
}

gpu::Buffer upload_raw(const gpu::Device& device, const TensorView& t) {
  if (t.quantized) throw Error("expected a raw f16 tensor, found a quantized one", "tensor " + t.name);
  return upload_bytes(device, t.data, t.name);
}

gpu::Buffer upload_as_f32(const gpu::Device& device, const TensorView& t) {
  std::vector<float> v = dequantize(t);
  gpu::Buffer b = device.create_storage(v.size() * 4, t.name);
  device.upload(b, std::span<const float>(v));
  return b;
}

}  // namespace ember::trellis
