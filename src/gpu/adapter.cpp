#include "gpu/adapter.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>

#include "common/error.h"

namespace ember::gpu {
namespace {

std::string to_string(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}

std::string backend_name(WGPUBackendType b) {
  switch (b) {
    case WGPUBackendType_Null: return "Null";
    case WGPUBackendType_WebGPU: return "WebGPU";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    default: return "Undefined";
  }
}

std::string adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "DiscreteGPU";
    case WGPUAdapterType_IntegratedGPU: return "IntegratedGPU";
    case WGPUAdapterType_CPU: return "CPU";
    default: return "Unknown";
  }
}

AdapterHandle request_adapter(const Instance& inst, const WGPURequestAdapterOptions& opts) {
  struct Result {
    WGPUAdapter adapter = nullptr;
    bool done = false;
  } r;
  WGPURequestAdapterCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter a, WGPUStringView, void* u, void*) {
    auto* res = static_cast<Result*>(u);
    res->adapter = status == WGPURequestAdapterStatus_Success ? a : nullptr;
    res->done = true;
  };
  cb.userdata1 = &r;
  wgpuInstanceRequestAdapter(inst.get(), &opts, cb);
  inst.wait_until([&] { return r.done; });
  return AdapterHandle(r.adapter);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::string feature_name(WGPUFeatureName f) {
  switch (f) {
    case WGPUFeatureName_DepthClipControl: return "depth-clip-control";
    case WGPUFeatureName_Depth32FloatStencil8: return "depth32float-stencil8";
    case WGPUFeatureName_TimestampQuery: return "timestamp-query";
    case WGPUFeatureName_TextureCompressionBC: return "texture-compression-bc";
    case WGPUFeatureName_IndirectFirstInstance: return "indirect-first-instance";
    case WGPUFeatureName_ShaderF16: return "shader-f16";
    case WGPUFeatureName_RG11B10UfloatRenderable: return "rg11b10ufloat-renderable";
    case WGPUFeatureName_BGRA8UnormStorage: return "bgra8unorm-storage";
    case WGPUFeatureName_Float32Filterable: return "float32-filterable";
    case WGPUFeatureName_Float32Blendable: return "float32-blendable";
    case WGPUFeatureName_ClipDistances: return "clip-distances";
    case WGPUFeatureName_DualSourceBlending: return "dual-source-blending";
    case WGPUFeatureName_Subgroups: return "subgroups";
    case WGPUFeatureName_CoreFeaturesAndLimits: return "core-features-and-limits";
    default: {
      // Dawn's own features, numbered from 0x50000 in this build (docs/platform.md): names as
      // Dawn spells them. 0x50005 is not a feature of this build.
      static const char* const kDawn[] = {
          "dawn-internal-usages", "dawn-multi-planar-formats", "dawn-native", "chromium-experimental-timestamp-query-inside-passes",
          "implicit-device-synchronization", nullptr, "transient-attachments", "msaa-render-to-single-sampled",
          "d3d11-multithread-protected", "angle-texture-sharing", "pixel-local-storage-coherent", "pixel-local-storage-non-coherent",
          "unorm16-texture-formats", "snorm16-texture-formats", "multi-planar-format-extended-usages", "multi-planar-format-p010",
          "host-mapped-pointer", "multi-planar-render-targets", "multi-planar-format-nv12a", "framebuffer-fetch",
          "buffer-map-extended-usages", "adapter-properties-memory-heaps", "adapter-properties-d3d", "adapter-properties-vk",
          "r8unorm-storage", "dawn-format-capabilities", "dawn-drm-format-capabilities", "norm16-texture-formats",
          "multi-planar-format-nv16", "multi-planar-format-nv24", "multi-planar-format-p210", "multi-planar-format-p410",
          "shared-texture-memory-vk-dedicated-allocation", "shared-texture-memory-a-hardware-buffer", "shared-texture-memory-dma-buf",
          "shared-texture-memory-opaque-fd", "shared-texture-memory-zircon-handle", "shared-texture-memory-dxgi-shared-handle",
          "shared-texture-memory-d3d11-texture2d", "shared-texture-memory-iosurface", "shared-texture-memory-egl-image",
          "shared-fence-vk-semaphore-opaque-fd", "shared-fence-sync-fd", "shared-fence-vk-semaphore-zircon-handle",
          "shared-fence-dxgi-shared-handle", "shared-fence-mtl-shared-event", "shared-buffer-memory-d3d12-resource", "static-samplers",
          "y-cb-cr-vulkan-samplers", "shader-module-compilation-options", "dawn-load-resolve-texture", "dawn-partial-load-resolve-texture",
          "multi-draw-indirect", "dawn-texel-copy-buffer-row-alignment", "flexible-texture-views", "chromium-experimental-subgroup-matrix",
          "shared-fence-egl-sync", "dawn-device-allocator-control", "texture-formats-tier1"};
      const uint32_t v = static_cast<uint32_t>(f);
      if (v >= 0x50000 && v - 0x50000 < std::size(kDawn) && kDawn[v - 0x50000]) return kDawn[v - 0x50000];
      char buf[32];
      snprintf(buf, sizeof buf, "0x%x", static_cast<unsigned>(f));
      return buf;
    }
  }
}

AdapterDescription describe(WGPUInstance instance, WGPUAdapter adapter) {
  AdapterDescription d;
  WGPUAdapterInfo info{};
  wgpuAdapterGetInfo(adapter, &info);
  d.vendor = to_string(info.vendor);
  d.architecture = to_string(info.architecture);
  d.device = to_string(info.device);
  d.driver = to_string(info.description);
  d.backend = backend_name(info.backendType);
  d.type = adapter_type_name(info.adapterType);
  d.vendor_id = info.vendorID;
  d.device_id = info.deviceID;
  d.subgroup_min = info.subgroupMinSize;
  d.subgroup_max = info.subgroupMaxSize;
  wgpuAdapterInfoFreeMembers(info);

  WGPUSupportedFeatures f{};
  wgpuAdapterGetFeatures(adapter, &f);
  for (size_t i = 0; i < f.featureCount; i++) d.features.push_back(feature_name(f.features[i]));
  wgpuSupportedFeaturesFreeMembers(f);
  std::sort(d.features.begin(), d.features.end());
  d.shader_f16 = wgpuAdapterHasFeature(adapter, WGPUFeatureName_ShaderF16);
  d.subgroups = wgpuAdapterHasFeature(adapter, WGPUFeatureName_Subgroups);
  d.timestamp_query = wgpuAdapterHasFeature(adapter, WGPUFeatureName_TimestampQuery);
  d.dot4_i8_packed = wgpuInstanceHasWGSLLanguageFeature(instance, WGPUWGSLLanguageFeatureName_Packed4x8IntegerDotProduct);
  wgpuAdapterGetLimits(adapter, &d.limits);
  return d;
}

nlohmann::json AdapterDescription::to_json() const {
  const WGPULimits& l = limits;
  return {
      {"vendor", vendor},
      {"architecture", architecture},
      {"device", device},
      {"driver", driver},
      {"backend", backend},
      {"adapterType", type},
      {"vendorId", vendor_id},
      {"deviceId", device_id},
      {"subgroupMinSize", subgroup_min},
      {"subgroupMaxSize", subgroup_max},
      {"features", features},
      {"wgslLanguageFeatures", dot4_i8_packed ? nlohmann::json::array({"packed_4x8_integer_dot_product"}) : nlohmann::json::array()},
      {"limits",
       {{"maxStorageBufferBindingSize", l.maxStorageBufferBindingSize},
        {"maxBufferSize", l.maxBufferSize},
        {"maxUniformBufferBindingSize", l.maxUniformBufferBindingSize},
        {"maxStorageBuffersPerShaderStage", l.maxStorageBuffersPerShaderStage},
        {"maxBindGroups", l.maxBindGroups},
        {"maxBindingsPerBindGroup", l.maxBindingsPerBindGroup},
        {"minStorageBufferOffsetAlignment", l.minStorageBufferOffsetAlignment},
        {"minUniformBufferOffsetAlignment", l.minUniformBufferOffsetAlignment},
        {"maxComputeWorkgroupStorageSize", l.maxComputeWorkgroupStorageSize},
        {"maxComputeInvocationsPerWorkgroup", l.maxComputeInvocationsPerWorkgroup},
        {"maxComputeWorkgroupSizeX", l.maxComputeWorkgroupSizeX},
        {"maxComputeWorkgroupSizeY", l.maxComputeWorkgroupSizeY},
        {"maxComputeWorkgroupSizeZ", l.maxComputeWorkgroupSizeZ},
        {"maxComputeWorkgroupsPerDimension", l.maxComputeWorkgroupsPerDimension},
        {"maxImmediateSize", l.maxImmediateSize}}},
  };
}

Instance::Instance() {
  WGPUInstanceDescriptor desc{};
  instance_ = InstanceHandle(wgpuCreateInstance(&desc));
  if (!instance_) throw Error("Dawn could not create a WebGPU instance", "gpu", "check that libwebgpu_wrapper.so loads (scripts/setup.sh)");
}

std::vector<Instance::Found> Instance::enumerate(bool include_null) const {
  // The C API has no "list all adapters": ask with each preference and backend, keep distinct ones.
  std::vector<WGPURequestAdapterOptions> asks;
  for (WGPUBackendType backend : {WGPUBackendType_Undefined, WGPUBackendType_Vulkan, WGPUBackendType_OpenGLES, WGPUBackendType_Null}) {
    if (backend == WGPUBackendType_Null && !include_null) continue;
    for (WGPUPowerPreference pref : {WGPUPowerPreference_HighPerformance, WGPUPowerPreference_LowPower}) {
      for (WGPUBool fallback : {0u, 1u}) {
        WGPURequestAdapterOptions o{};
        o.powerPreference = pref;
        o.backendType = backend;
        o.forceFallbackAdapter = fallback;
        asks.push_back(o);
      }
    }
  }
  std::vector<Found> found;
  for (const auto& o : asks) {
    AdapterHandle a = request_adapter(*this, o);
    if (!a) continue;
    AdapterDescription d = describe(instance_.get(), a.get());
    if (d.is_null() && !include_null) continue;
    bool dup = std::any_of(found.begin(), found.end(), [&](const Found& f) {
      const auto& e = f.description;
      return e.backend == d.backend && e.vendor_id == d.vendor_id && e.device_id == d.device_id && e.device == d.device && e.type == d.type;
    });
    if (!dup) found.push_back({std::move(a), std::move(d)});
  }
  // Real GPUs first, then CPU adapters, Null last: index 0 is the sensible default.
  auto rank = [](const AdapterDescription& d) {
    if (d.is_null()) return 9;
    if (d.type == "DiscreteGPU") return 0;
    if (d.type == "IntegratedGPU") return 1;
    if (d.type == "CPU") return 3;
    return 2;
  };
  std::stable_sort(found.begin(), found.end(), [&](const Found& a, const Found& b) { return rank(a.description) < rank(b.description); });
  return found;
}

Instance::Found Instance::select(const std::string& selector) const {
  std::vector<Found> all = enumerate(lower(selector) == "null");
  if (all.empty())
    throw Error("no WebGPU adapter found", "gpu",
                "install a Vulkan driver (on CPU-only machines: mesa-vulkan-drivers from bookworm-backports, see scripts/setup.sh)");
  if (selector.empty()) return std::move(all.front());
  bool numeric = std::all_of(selector.begin(), selector.end(), [](unsigned char c) { return std::isdigit(c); });
  if (numeric) {
    size_t i = std::stoul(selector);
    if (i >= all.size())
      throw Error("adapter index " + selector + " out of range (" + std::to_string(all.size()) + " adapters)", "--device", "run `ember devices` to list them");
    return std::move(all[i]);
  }
  std::string want = lower(selector);
  for (auto& f : all) {
    const auto& d = f.description;
    for (const std::string& hay : {d.device, d.vendor, d.driver, d.backend, d.type})
      if (lower(hay).find(want) != std::string::npos) return std::move(f);
  }
  throw Error("no adapter matches '" + selector + "'", "--device", "run `ember devices` to list adapters; pass an index or part of a name");
}

}  // namespace ember::gpu
