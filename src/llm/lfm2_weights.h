// An LLM pack's sections in GPU memory: every section at a 256-byte aligned place of one buffer,
// in the pack's order (a layer's matrices, then the next layer's, then the head), aliases (embed.*
// = head.*) sharing one place. Sections are bound as ranges of it; a kernel that reads several
// matrices (the one-dispatch residual MLP) binds the one range that covers them all. A pack larger
// than one storage binding may span (maxStorageBufferBindingSize, maxBufferSize) continues in a
// second buffer, and so on.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "kernels/q4_matrix.h"

namespace ember::llm {

class Lfm2Weights {
 public:
  // Uploads every section; `progress(done_bytes, total_bytes)` is called as it goes.
  // max_buffer_bytes: where a buffer ends (0: what one storage binding may span on this device).
  Lfm2Weights(const gpu::Device& device, const formats::LlmPack& pack,
              const std::function<void(uint64_t, uint64_t)>& progress = {}, uint64_t max_buffer_bytes = 0);

  gpu::Binding section(const std::string& name) const;  // Error naming the section if absent
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  // A 4-bit matrix by section prefix ("L3.conv.in_proj", "head", "L0.mlp.down" with
  // kmajor = true for down.kquant/kscales).
  kernels::Q4Matrix matrix(const std::string& prefix, uint32_t rows, uint32_t cols, bool kmajor = false) const;
  uint64_t bytes() const { return bytes_; }
  size_t buffers() const { return buffers_.size(); }

 private:
  struct Place {
    size_t buffer = 0;
    uint64_t offset = 0, bytes = 0;
  };
  std::vector<gpu::Buffer> buffers_;
  std::map<std::string, Place> by_name_;
  uint64_t bytes_ = 0;  // distinct section bytes (aliases once)
};

}  // namespace ember::llm
