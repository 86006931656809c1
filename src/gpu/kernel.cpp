#include "gpu/kernel.h"

#include <sstream>

#include "common/error.h"
#include "gpu/kernel_sources.h"

namespace ember::gpu {
namespace {

WGPUStringView view(const std::string& s) { return WGPUStringView{s.data(), s.size()}; }
std::string to_string(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}

// Compiler messages of a module, mapped back to the .wgsl file and line they came from.
std::string compilation_errors(const Device& device, WGPUShaderModule module, const PreprocessedShader& shader) {
  struct Info {
    std::string text;
    bool done = false;
  } info;
  struct Ctx {
    Info* info;
    const PreprocessedShader* shader;
  } ctx{&info, &shader};
  WGPUCompilationInfoCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUCompilationInfoRequestStatus status, const WGPUCompilationInfo* ci, void* u, void*) {
    auto* c = static_cast<Ctx*>(u);
    if (status == WGPUCompilationInfoRequestStatus_Success && ci) {
      for (size_t i = 0; i < ci->messageCount; i++) {
        const WGPUCompilationMessage& m = ci->messages[i];
        if (m.type != WGPUCompilationMessageType_Error) continue;
        std::string where = "line " + std::to_string(m.lineNum);
        if (m.lineNum >= 1 && m.lineNum <= c->shader->origins.size()) {
          const auto& o = c->shader->origins[m.lineNum - 1];
          where = "src/kernels/" + o.file + ":" + std::to_string(o.line);
        }
        c->info->text += where + ":" + std::to_string(m.linePos) + ": " + to_string(m.message) + "\n";
      }
    }
    c->info->done = true;
  };
  cb.userdata1 = &ctx;
  wgpuShaderModuleGetCompilationInfo(module, cb);
  device.instance().wait_until([&] { return info.done; });
  return info.text;
}

}  // namespace

std::string KernelKey::label() const {
  std::string s = file;
  if (s.size() > 5 && s.substr(s.size() - 5) == ".wgsl") s.resize(s.size() - 5);
  if (entry != "main") s += "." + entry;
  if (!defines.empty()) {
    s += "[";
    bool first = true;
    for (const auto& d : defines) {
      s += (first ? "" : ",") + d;
      first = false;
    }
    s += "]";
  }
  if (!constants.empty()) {
    s += "{";
    for (size_t i = 0; i < constants.size(); i++) {
      std::ostringstream v;
      v << constants[i].second;
      s += (i ? "," : "") + constants[i].first + "=" + v.str();
    }
    s += "}";
  }
  return s;
}

const Kernel& KernelCache::get(const KernelKey& key) {
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return *it->second;

  std::set<std::string> defines = key.defines;
  // Features the device really has are visible to every shader, so a kernel file can offer a
  // faster path without each caller asking for it.
  if (device_.has_f16()) defines.insert("HAS_F16");
  if (device_.has_subgroups()) defines.insert("HAS_SUBGROUPS");
  PreprocessedShader shader = preprocess_wgsl(key.file, defines);
  std::string label = key.label();

  WGPUShaderSourceWGSL src{};
  src.chain.sType = WGPUSType_ShaderSourceWGSL;
  src.code = view(shader.text);
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &src.chain;
  md.label = view(label);

  auto kernel = std::make_unique<Kernel>();
  kernel->label_ = label;
  ShaderModuleHandle module;
  std::string scope_error;
  try {
    device_.scoped("compiling kernel " + label, [&] { module = ShaderModuleHandle(wgpuDeviceCreateShaderModule(device_.get(), &md)); });
  } catch (const Error& e) {
    scope_error = e.what();
  }
  std::string errors = module ? compilation_errors(device_, module.get(), shader) : "";
  if (!errors.empty() || !scope_error.empty())
    throw Error("WGSL compilation failed:\n" + (errors.empty() ? scope_error : errors), "kernel " + label,
                "fix the shader source");

  std::vector<WGPUConstantEntry> constants;
  for (const auto& [name, value] : key.constants) {
    WGPUConstantEntry c{};
    c.key = view(name);
    c.value = value;
    constants.push_back(c);
  }
  WGPUComputePipelineDescriptor pd{};
  pd.label = view(label);
  pd.compute.module = module.get();
  pd.compute.entryPoint = view(key.entry);
  pd.compute.constantCount = constants.size();
  pd.compute.constants = constants.data();
  device_.scoped("creating pipeline for kernel " + label, [&] {
    kernel->pipeline_ = PipelineHandle(wgpuDeviceCreateComputePipeline(device_.get(), &pd));
    kernel->layout_ = BindGroupLayoutHandle(wgpuComputePipelineGetBindGroupLayout(kernel->pipeline_.get(), 0));
  });
  const Kernel& ref = *kernel;
  kernels_.emplace(key, std::move(kernel));
  return ref;
}

BindGroup KernelCache::bind(const Kernel& kernel, const std::vector<Binding>& bindings) const {
  const WGPULimits& lim = device_.limits();
  std::vector<WGPUBindGroupEntry> entries;
  for (size_t i = 0; i < bindings.size(); i++) {
    const Binding& b = bindings[i];
    if (!b.buffer || !*b.buffer) throw Error("binding " + std::to_string(i) + " has no buffer", "kernel " + kernel.label());
    uint64_t size = b.size == WGPU_WHOLE_SIZE ? b.buffer->size() - b.offset : b.size;
    std::string where = "kernel " + kernel.label() + ", binding " + std::to_string(i) + " (" + b.buffer->label() + ")";
    if (b.offset + size > b.buffer->size())
      throw Error("range [" + std::to_string(b.offset) + ", " + std::to_string(b.offset + size) + ") is outside the buffer of " +
                      std::to_string(b.buffer->size()) + " bytes",
                  where);
    if (size > lim.maxStorageBufferBindingSize)
      throw Error("binding of " + std::to_string(size) + " bytes exceeds this adapter's maxStorageBufferBindingSize (" +
                      std::to_string(lim.maxStorageBufferBindingSize) + ")",
                  where, "bind the data in smaller ranges (one per section or tensor)");
    if (b.offset % lim.minStorageBufferOffsetAlignment != 0)
      throw Error("offset " + std::to_string(b.offset) + " is not a multiple of minStorageBufferOffsetAlignment (" +
                      std::to_string(lim.minStorageBufferOffsetAlignment) + ")",
                  where, "keep offsets 256-aligned");
    WGPUBindGroupEntry e{};
    e.binding = static_cast<uint32_t>(i);
    e.buffer = b.buffer->get();
    e.offset = b.offset;
    e.size = size;
    entries.push_back(e);
  }
  WGPUBindGroupDescriptor desc{};
  desc.layout = kernel.layout();
  desc.entryCount = entries.size();
  desc.entries = entries.data();
  BindGroup g;
  device_.scoped("binding resources for kernel " + kernel.label(),
                 [&] { g.handle_ = BindGroupHandle(wgpuDeviceCreateBindGroup(device_.get(), &desc)); });
  return g;
}

}  // namespace ember::gpu
