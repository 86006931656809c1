// Compiled compute kernels: a small key names a variant, the cache compiles it once.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device.h"

namespace ember::gpu {

using ShaderModuleHandle = Handle<WGPUShaderModule, wgpuShaderModuleRelease>;
using PipelineHandle = Handle<WGPUComputePipeline, wgpuComputePipelineRelease>;
using BindGroupLayoutHandle = Handle<WGPUBindGroupLayout, wgpuBindGroupLayoutRelease>;
using BindGroupHandle = Handle<WGPUBindGroup, wgpuBindGroupRelease>;

// Which kernel: a WGSL file, its entry point, structural variant switches (preprocessor names)
// and numeric specialisation (`override` constants).
struct KernelKey {
  std::string file;                                  // "rmsnorm.wgsl"
  std::string entry = "main";
  std::set<std::string> defines;                     // {"SUBGROUPS"}
  std::vector<std::pair<std::string, double>> constants;  // {{"WG", 256}}

  bool operator==(const KernelKey&) const = default;
  auto operator<=>(const KernelKey&) const = default;
  // Readable label used in errors and profiles: "rmsnorm.main[SUBGROUPS]{WG=256}".
  std::string label() const;
};

class Kernel {
 public:
  WGPUComputePipeline pipeline() const { return pipeline_.get(); }
  WGPUBindGroupLayout layout() const { return layout_.get(); }
  const std::string& label() const { return label_; }

 private:
  friend class KernelCache;
  PipelineHandle pipeline_;
  BindGroupLayoutHandle layout_;
  std::string label_;
};

// One buffer range bound at binding index i (the i-th entry of a bind group).
struct Binding {
  const Buffer* buffer;
  uint64_t offset = 0;
  uint64_t size = WGPU_WHOLE_SIZE;  // whole buffer from offset
};

class BindGroup {
 public:
  WGPUBindGroup get() const { return handle_.get(); }
  explicit operator bool() const { return static_cast<bool>(handle_); }

 private:
  friend class KernelCache;
  BindGroupHandle handle_;
};

class KernelCache {
 public:
  explicit KernelCache(const Device& device) : device_(device) {}

  // Compiles on first use. Shader errors become ember::Error naming the kernel and the WGSL
  // file:line:column of each message.
  const Kernel& get(const KernelKey& key);

  // Bind group for `kernel`'s group 0 with bindings 0..n-1. Checks every range against the
  // adapter's maxStorageBufferBindingSize and alignment before Dawn sees it.
  BindGroup bind(const Kernel& kernel, const std::vector<Binding>& bindings) const;

  const Device& device() const { return device_; }
  size_t size() const { return kernels_.size(); }

 private:
  const Device& device_;
  std::map<KernelKey, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace ember::gpu
