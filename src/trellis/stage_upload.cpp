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

kernels::QuantizedMatrix upload_linear(const gpu::Device& device, const TensorView& w, const TensorView& bias) {
  if (!w.quantized) throw Error("expected a symmetric-quantized matrix, found a raw tensor", "tensor " + w.name);
  if (bias.quantized || bias.shape.size() != 1 || bias.shape[0] != w.rows)
    throw Error("bias must be a raw f16 vector of " + std::to_string(w.rows) + " values", "tensor " + bias.name);
  if (int64_t(w.data.size()) != w.padded_rows * w.padded_columns ||
      int64_t(w.scales.size()) != w.padded_rows * (w.padded_columns / kQuantGroup) * 2)
    throw Error("data or scales size does not match the padded shape", "tensor " + w.name, "repack the stage");
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
