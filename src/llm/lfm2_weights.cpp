#include "llm/lfm2_weights.h"

#include <algorithm>
#include <set>

#include "common/error.h"

namespace ember::llm {

namespace {
constexpr uint64_t kAlign = 256;  // WebGPU's largest minStorageBufferOffsetAlignment
}

Lfm2Weights::Lfm2Weights(const gpu::Device& device, const formats::LlmPack& pack,
                         const std::function<void(uint64_t, uint64_t)>& progress, uint64_t max_buffer_bytes) {
  const auto& sections = pack.runtime().sections;
  // Places first: one per distinct pack offset, in the pack's order; a section that would take a
  // buffer past what one storage binding may span starts the next buffer.
  const uint64_t limit = max_buffer_bytes ? max_buffer_bytes
                                          : std::min<uint64_t>(device.limits().maxBufferSize, device.limits().maxStorageBufferBindingSize);
  std::map<uint64_t, Place> by_offset;
  std::vector<uint64_t> sizes{0};
  uint64_t total = 0;
  for (const auto& s : sections) {
    total += s.bytes;
    if (by_offset.count(s.offset)) continue;
    const uint64_t padded = (s.bytes + kAlign - 1) / kAlign * kAlign;
    if (sizes.back() > 0 && sizes.back() + padded > limit) sizes.push_back(0);
    by_offset[s.offset] = {sizes.size() - 1, sizes.back(), s.bytes};
    sizes.back() += padded;
  }
  buffers_.reserve(sizes.size());  // bindings point into it: no reallocation after this
  for (size_t i = 0; i < sizes.size(); i++)
    buffers_.push_back(device.create_storage(std::max<uint64_t>(sizes[i], kAlign), "weights " + std::to_string(i)));
  std::set<uint64_t> uploaded;  // pack offsets
  uint64_t done = 0;
  for (const auto& s : sections) {
    const Place& place = by_offset.at(s.offset);
    if (uploaded.insert(s.offset).second) {
      device.upload(buffers_[place.buffer], place.offset, pack.section(s.name));
      bytes_ += s.bytes;
    }
    by_name_[s.name] = place;
    done += s.bytes;
    if (progress) progress(done, total);
  }
  device.check("uploading the weights of " + pack.dir().string());
}

gpu::Binding Lfm2Weights::section(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) throw Error("section '" + name + "' is not in the pack", "weights.bin", "repack the model with `ember pack`");
  return {&buffers_[it->second.buffer], it->second.offset, it->second.bytes};
}

kernels::Q4Matrix Lfm2Weights::matrix(const std::string& prefix, uint32_t rows, uint32_t cols, bool kmajor) const {
  kernels::Q4Matrix m;
  m.quant = section(prefix + (kmajor ? ".kquant" : ".quant"));
  m.scales = section(prefix + (kmajor ? ".kscales" : ".scales"));
  if (has(prefix + ".zero_points")) m.zero_points = section(prefix + ".zero_points");
  m.rows = rows;
  m.cols = cols;
  return m;
}

}  // namespace ember::llm
