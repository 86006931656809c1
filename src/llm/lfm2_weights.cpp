#include "llm/lfm2_weights.h"

#include "common/error.h"

namespace ember::llm {

Lfm2Weights::Lfm2Weights(const gpu::Device& device, const formats::LlmPack& pack,
                         const std::function<void(uint64_t, uint64_t)>& progress) {
  const auto& sections = pack.runtime().sections;
  uint64_t total = 0;
  for (const auto& s : sections) total += s.bytes;
  uint64_t done = 0;
  for (const auto& s : sections) {
    auto it = by_offset_.find(s.offset);
    if (it == by_offset_.end()) {
      gpu::Buffer b = device.create_storage(s.bytes, s.name);
      device.upload(b, 0, pack.section(s.name));
      bytes_ += s.bytes;
      it = by_offset_.emplace(s.offset, std::move(b)).first;
    }
    by_name_[s.name] = &it->second;
    done += s.bytes;
    if (progress) progress(done, total);
  }
  device.check("uploading the weights of " + pack.dir().string());
}

const gpu::Buffer& Lfm2Weights::section(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) throw Error("section '" + name + "' is not in the pack", "weights.bin", "repack the model with `ember pack`");
  return *it->second;
}

kernels::Q4Matrix Lfm2Weights::matrix(const std::string& prefix, uint32_t rows, uint32_t cols, bool kmajor) const {
  kernels::Q4Matrix m;
  m.quant = {&section(prefix + (kmajor ? ".kquant" : ".quant"))};
  m.scales = {&section(prefix + (kmajor ? ".kscales" : ".scales"))};
  if (has(prefix + ".zero_points")) m.zero_points = {&section(prefix + ".zero_points")};
  m.rows = rows;
  m.cols = cols;
  return m;
}

}  // namespace ember::llm
