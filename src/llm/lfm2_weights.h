// An LLM pack's sections in GPU memory: one buffer holding every section at a 256-byte aligned
// place, in the pack's order (a layer's matrices, then the next layer's, then the head), aliases
// (embed.* = head.*) sharing one place. Sections are bound as ranges of it, each within the
// adapter's maxStorageBufferBindingSize; a kernel that reads several matrices (the one-dispatch
// residual MLP) binds the one range that covers them all.
#pragma once

#include <map>
#include <string>

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "kernels/q4_matrix.h"

namespace ember::llm {

class Lfm2Weights {
 public:
  // Uploads every section; `progress(done_bytes, total_bytes)` is called as it goes.
  Lfm2Weights(const gpu::Device& device, const formats::LlmPack& pack,
              const std::function<void(uint64_t, uint64_t)>& progress = {});

  gpu::Binding section(const std::string& name) const;  // Error naming the section if absent
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  // A 4-bit matrix by section prefix ("L3.conv.in_proj", "head", "L0.mlp.down" with
  // kmajor = true for down.kquant/kscales).
  kernels::Q4Matrix matrix(const std::string& prefix, uint32_t rows, uint32_t cols, bool kmajor = false) const;
  uint64_t bytes() const { return bytes_; }

 private:
  struct Place {
    uint64_t offset = 0, bytes = 0;
  };
  gpu::Buffer buffer_;
  std::map<std::string, Place> by_name_;
  uint64_t bytes_ = 0;  // distinct section bytes (aliases once)
};

}  // namespace ember::llm
