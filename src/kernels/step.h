// The per-step parameters every position-dependent kernel reads from a small GPU buffer, so that a
// bind group made once per model serves every token: the caller rewrites this buffer with
// Device::upload (queue.writeBuffer) before each submit instead of making new bind groups.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "gpu/device.h"

namespace ember::kernels {

// Mirrors `struct Step` in step.wgsl. Bound as a read-only *storage* buffer (not a uniform), so
// that a later GPU kernel may advance it without a CPU round trip.
struct StepParams {
  uint32_t start = 0;  // position of the first token of this step (decode: the token's position)
  uint32_t rows = 0;   // T, the number of tokens this step processes (informational; record() gets T)
  uint32_t seq = 0;    // batched decode: the sequence (activation row, cache slot) of this entry
  // Counts a model's decode steps from 1 (wraps). Kernels whose scratch words carry a generation
  // tag (residual_mlp_q4.wgsl) take it from its parity: each step writes every tagged word once.
  uint32_t decode_step = 0;
};
static_assert(sizeof(StepParams) == 16);

// A 16-byte buffer holding one StepParams, bindable as storage or as a uniform.
inline gpu::Buffer create_step_buffer(const gpu::Device& device, const std::string& label = "step") {
  gpu::Buffer b = device.create_buffer(sizeof(StepParams),
                                       WGPUBufferUsage_Storage | WGPUBufferUsage_Uniform | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, label);
  StepParams p{};
  device.upload(b, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p), sizeof p));
  return b;
}

// Entries for kernels that step several sequences at once (one StepParams per sequence).
inline void upload_steps(const gpu::Device& device, const gpu::Buffer& steps, std::span<const StepParams> entries) {
  device.upload(steps, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(entries.data()), entries.size_bytes()));
}

inline void upload_step(const gpu::Device& device, const gpu::Buffer& step, const StepParams& p) { upload_steps(device, step, {&p, 1}); }

// Workgroup count along one dimension, checked against the adapter limit.
uint32_t checked_groups(const gpu::Device& device, uint64_t n, const std::string& where);

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

}  // namespace ember::kernels
