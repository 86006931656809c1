// An LLM pack's sections in GPU memory: one buffer per section (so no binding exceeds the
// adapter's maxStorageBufferBindingSize), aliases (embed.* = head.*) sharing one buffer.
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

  const gpu::Buffer& section(const std::string& name) const;  // Error naming the section if absent
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  // A 4-bit matrix by section prefix ("L3.conv.in_proj", "head", "L0.mlp.down" with
  // kmajor = true for down.kquant/kscales).
  kernels::Q4Matrix matrix(const std::string& prefix, uint32_t rows, uint32_t cols, bool kmajor = false) const;
  uint64_t bytes() const { return bytes_; }

 private:
  std::map<uint64_t, gpu::Buffer> by_offset_;        // one buffer per distinct offset
  std::map<std::string, const gpu::Buffer*> by_name_;
  uint64_t bytes_ = 0;
};

}  // namespace ember::llm
