// Small helpers the kernel tests share: buffers from vectors, poisoned outputs, one-shot runs.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "gpu/recorder.h"
#include "gpu_fixture.h"

namespace ember::test {

template <typename T>
inline gpu::Buffer buffer_from(const std::vector<T>& v, const std::string& label) {
  auto& dev = test_device();
  gpu::Buffer b = dev.create_storage(std::max<size_t>(v.size() * sizeof(T), 16), label);
  if (!v.empty()) dev.upload(b, std::span<const T>(v));
  return b;
}

inline gpu::Buffer poisoned(size_t n, const std::string& label) {
  return buffer_from(std::vector<float>(n, kPoison), label);
}

inline std::vector<float> read_floats(const gpu::Buffer& b, size_t n) {
  return test_device().download_as<float>(b, 0, n);
}

}  // namespace ember::test
