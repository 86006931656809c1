// Our declarations of the subset of Dawn's WebGPU C API that ember calls.
//
// The Dawn build we link (npm bun-webgpu-linux-x64@0.1.7, libwebgpu_wrapper.so) ships no header,
// and its enum numbers differ from today's upstream webgpu.h, so a foreign header would compile
// and silently ask for the wrong things. Every number here is the one of that build (docs/platform.md);
// tests/gpu_abi_test.cpp proves each declaration we use on a real adapter.
#pragma once

#include <cstddef>
#include <cstdint>


using WGPUBool = uint32_t;
using WGPUFlags = uint64_t;

#define EMBER_WGPU_HANDLE(name) typedef struct name##Impl* name
EMBER_WGPU_HANDLE(WGPUInstance);
EMBER_WGPU_HANDLE(WGPUAdapter);
EMBER_WGPU_HANDLE(WGPUDevice);
EMBER_WGPU_HANDLE(WGPUQueue);
EMBER_WGPU_HANDLE(WGPUBuffer);
EMBER_WGPU_HANDLE(WGPUShaderModule);
EMBER_WGPU_HANDLE(WGPUComputePipeline);
EMBER_WGPU_HANDLE(WGPUBindGroupLayout);
EMBER_WGPU_HANDLE(WGPUBindGroup);
EMBER_WGPU_HANDLE(WGPUCommandEncoder);
EMBER_WGPU_HANDLE(WGPUCommandBuffer);
EMBER_WGPU_HANDLE(WGPUComputePassEncoder);
EMBER_WGPU_HANDLE(WGPUQuerySet);
EMBER_WGPU_HANDLE(WGPUPipelineLayout);
EMBER_WGPU_HANDLE(WGPUSurface);
#undef EMBER_WGPU_HANDLE

constexpr size_t WGPU_STRLEN = SIZE_MAX;
constexpr uint64_t WGPU_WHOLE_SIZE = UINT64_MAX;
constexpr uint32_t WGPU_QUERY_SET_INDEX_UNDEFINED = 0xFFFFFFFFu;

struct WGPUStringView {
  const char* data;
  size_t length;
};

// ---- enums (numbers of this Dawn build) ----
enum WGPUSType : uint32_t {
  WGPUSType_ShaderSourceWGSL = 0x2,
  WGPUSType_DawnTogglesDescriptor = 0x5000A,
};
enum WGPUFeatureName : uint32_t {
  WGPUFeatureName_DepthClipControl = 1,
  WGPUFeatureName_Depth32FloatStencil8 = 2,
  WGPUFeatureName_TimestampQuery = 3,
  WGPUFeatureName_TextureCompressionBC = 4,
  WGPUFeatureName_IndirectFirstInstance = 9,
  WGPUFeatureName_ShaderF16 = 10,
  WGPUFeatureName_RG11B10UfloatRenderable = 11,
  WGPUFeatureName_BGRA8UnormStorage = 12,
  WGPUFeatureName_Float32Filterable = 13,
  WGPUFeatureName_Float32Blendable = 14,
  WGPUFeatureName_ClipDistances = 15,
  WGPUFeatureName_DualSourceBlending = 16,
  WGPUFeatureName_Subgroups = 17,
  WGPUFeatureName_CoreFeaturesAndLimits = 18,
  WGPUFeatureName_Force32 = 0x7FFFFFFF,
};
enum WGPUWGSLLanguageFeatureName : uint32_t {
  WGPUWGSLLanguageFeatureName_Packed4x8IntegerDotProduct = 2,
};
enum WGPUCallbackMode : uint32_t { WGPUCallbackMode_AllowProcessEvents = 2 };
enum WGPUPowerPreference : uint32_t {
  WGPUPowerPreference_Undefined = 0,
  WGPUPowerPreference_LowPower = 1,
  WGPUPowerPreference_HighPerformance = 2,
};
enum WGPUFeatureLevel : uint32_t { WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Core = 2 };
enum WGPUBackendType : uint32_t {
  WGPUBackendType_Undefined = 0,
  WGPUBackendType_Null = 1,
  WGPUBackendType_WebGPU = 2,
  WGPUBackendType_D3D11 = 3,
  WGPUBackendType_D3D12 = 4,
  WGPUBackendType_Metal = 5,
  WGPUBackendType_Vulkan = 6,
  WGPUBackendType_OpenGL = 7,
  WGPUBackendType_OpenGLES = 8,
};
enum WGPUAdapterType : uint32_t {
  WGPUAdapterType_DiscreteGPU = 1,
  WGPUAdapterType_IntegratedGPU = 2,
  WGPUAdapterType_CPU = 3,
  WGPUAdapterType_Unknown = 4,
};
enum WGPURequestAdapterStatus : uint32_t { WGPURequestAdapterStatus_Success = 1 };
enum WGPURequestDeviceStatus : uint32_t { WGPURequestDeviceStatus_Success = 1 };
enum WGPUMapAsyncStatus : uint32_t { WGPUMapAsyncStatus_Success = 1 };
enum WGPUQueueWorkDoneStatus : uint32_t { WGPUQueueWorkDoneStatus_Success = 1 };
enum WGPUPopErrorScopeStatus : uint32_t { WGPUPopErrorScopeStatus_Success = 1 };
enum WGPUCompilationInfoRequestStatus : uint32_t { WGPUCompilationInfoRequestStatus_Success = 1 };
enum WGPUCompilationMessageType : uint32_t {
  WGPUCompilationMessageType_Error = 1,
  WGPUCompilationMessageType_Warning = 2,
  WGPUCompilationMessageType_Info = 3,
};
enum WGPUErrorType : uint32_t {
  WGPUErrorType_NoError = 1,
  WGPUErrorType_Validation = 2,
  WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4,
  WGPUErrorType_Unknown = 5,
};
enum WGPUErrorFilter : uint32_t {
  WGPUErrorFilter_Validation = 1,
  WGPUErrorFilter_OutOfMemory = 2,
  WGPUErrorFilter_Internal = 3,
};
enum WGPUDeviceLostReason : uint32_t {
  WGPUDeviceLostReason_Unknown = 1,
  WGPUDeviceLostReason_Destroyed = 2,
  WGPUDeviceLostReason_CallbackCancelled = 3,
  WGPUDeviceLostReason_FailedCreation = 4,
};
enum WGPUQueryType : uint32_t { WGPUQueryType_Occlusion = 1, WGPUQueryType_Timestamp = 2 };

using WGPUBufferUsage = WGPUFlags;
constexpr WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1;
constexpr WGPUBufferUsage WGPUBufferUsage_MapWrite = 0x2;
constexpr WGPUBufferUsage WGPUBufferUsage_CopySrc = 0x4;
constexpr WGPUBufferUsage WGPUBufferUsage_CopyDst = 0x8;
constexpr WGPUBufferUsage WGPUBufferUsage_Uniform = 0x40;
constexpr WGPUBufferUsage WGPUBufferUsage_Storage = 0x80;
constexpr WGPUBufferUsage WGPUBufferUsage_Indirect = 0x100;
constexpr WGPUBufferUsage WGPUBufferUsage_QueryResolve = 0x200;
using WGPUMapMode = WGPUFlags;
constexpr WGPUMapMode WGPUMapMode_Read = 0x1;
constexpr WGPUMapMode WGPUMapMode_Write = 0x2;

// ---- structs ----
struct WGPUChainedStruct {
  const WGPUChainedStruct* next;
  WGPUSType sType;
};
struct WGPUChainedStructOut {
  WGPUChainedStructOut* next;
  WGPUSType sType;
};
struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
};
struct WGPUInstanceDescriptor {
  const WGPUChainedStruct* nextInChain;
  // Newer Dawn revisions add capability fields here; zero-initialised they mean "defaults".
  uint64_t reserved[4];
};
struct WGPURequestAdapterOptions {
  const WGPUChainedStruct* nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
};
struct WGPUAdapterInfo {
  WGPUChainedStructOut* nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
};
struct WGPULimits {
  WGPUChainedStructOut* nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
  // Room for limits that revisions append after maxImmediateSize: Dawn writes only what it knows,
  // and we pass back exactly what it wrote, so the tail is never misread.
  uint32_t reservedTail[8];
};
struct WGPUSupportedFeatures {
  size_t featureCount;
  const WGPUFeatureName* features;
};
typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus, WGPUAdapter, WGPUStringView, void*, void*);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus, WGPUDevice, WGPUStringView, void*, void*);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice*, WGPUDeviceLostReason, WGPUStringView, void*, void*);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice*, WGPUErrorType, WGPUStringView, void*, void*);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus, WGPUStringView, void*, void*);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus, WGPUStringView, void*, void*);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus, WGPUErrorType, WGPUStringView, void*, void*);
struct WGPUCompilationInfo;
typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo*, void*, void*);

// Every callback-info struct of this build has this shape: {nextInChain, mode, callback, userdata1, userdata2}.
template <typename Callback>
struct WGPUCallbackInfoT {
  const WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  Callback callback;
  void* userdata1;
  void* userdata2;
};
using WGPURequestAdapterCallbackInfo = WGPUCallbackInfoT<WGPURequestAdapterCallback>;
using WGPURequestDeviceCallbackInfo = WGPUCallbackInfoT<WGPURequestDeviceCallback>;
using WGPUDeviceLostCallbackInfo = WGPUCallbackInfoT<WGPUDeviceLostCallback>;
using WGPUBufferMapCallbackInfo = WGPUCallbackInfoT<WGPUBufferMapCallback>;
using WGPUQueueWorkDoneCallbackInfo = WGPUCallbackInfoT<WGPUQueueWorkDoneCallback>;
using WGPUPopErrorScopeCallbackInfo = WGPUCallbackInfoT<WGPUPopErrorScopeCallback>;
using WGPUCompilationInfoCallbackInfo = WGPUCallbackInfoT<WGPUCompilationInfoCallback>;
struct WGPUUncapturedErrorCallbackInfo {  // no mode: it may fire at any time
  const WGPUChainedStruct* nextInChain;
  WGPUUncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
};
struct WGPUQueueDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUDeviceDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
};
struct WGPUBufferDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
};
struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
};
struct WGPUShaderModuleDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUCompilationMessage {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView message;
  WGPUCompilationMessageType type;
  uint64_t lineNum;
  uint64_t linePos;
  uint64_t offset;
  uint64_t length;
};
struct WGPUCompilationInfo {
  const WGPUChainedStruct* nextInChain;
  size_t messageCount;
  const WGPUCompilationMessage* messages;
};
struct WGPUConstantEntry {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView key;
  double value;
};
struct WGPUComputeState {
  const WGPUChainedStruct* nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry* constants;
};
struct WGPUComputePipelineDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;
  WGPUComputeState compute;
};
struct WGPUBindGroupEntry {
  const WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  void* sampler;
  void* textureView;
};
struct WGPUBindGroupDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry* entries;
};
struct WGPUCommandEncoderDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUCommandBufferDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUPassTimestampWrites {
  const WGPUChainedStruct* nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
};
struct WGPUComputePassDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites* timestampWrites;
};
struct WGPUQuerySetDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
};

// ---- functions ----
extern "C" {
WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor* descriptor);
void wgpuInstanceRequestAdapter(WGPUInstance, const WGPURequestAdapterOptions*, WGPURequestAdapterCallbackInfo);
void wgpuInstanceProcessEvents(WGPUInstance);
WGPUBool wgpuInstanceHasWGSLLanguageFeature(WGPUInstance, WGPUWGSLLanguageFeatureName);
void wgpuInstanceRelease(WGPUInstance);

void wgpuAdapterGetInfo(WGPUAdapter, WGPUAdapterInfo*);
void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo);
uint32_t wgpuAdapterGetLimits(WGPUAdapter, WGPULimits*);
void wgpuAdapterGetFeatures(WGPUAdapter, WGPUSupportedFeatures*);
WGPUBool wgpuAdapterHasFeature(WGPUAdapter, WGPUFeatureName);
void wgpuSupportedFeaturesFreeMembers(WGPUSupportedFeatures);
void wgpuAdapterRequestDevice(WGPUAdapter, const WGPUDeviceDescriptor*, WGPURequestDeviceCallbackInfo);
void wgpuAdapterRelease(WGPUAdapter);

WGPUQueue wgpuDeviceGetQueue(WGPUDevice);
uint32_t wgpuDeviceGetLimits(WGPUDevice, WGPULimits*);
WGPUBool wgpuDeviceHasFeature(WGPUDevice, WGPUFeatureName);
WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice, const WGPUBufferDescriptor*);
WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice, const WGPUShaderModuleDescriptor*);
WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice, const WGPUComputePipelineDescriptor*);
WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice, const WGPUBindGroupDescriptor*);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice, const WGPUCommandEncoderDescriptor*);
WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice, const WGPUQuerySetDescriptor*);
void wgpuDevicePushErrorScope(WGPUDevice, WGPUErrorFilter);
void wgpuDevicePopErrorScope(WGPUDevice, WGPUPopErrorScopeCallbackInfo);
void wgpuDeviceDestroy(WGPUDevice);
void wgpuDeviceRelease(WGPUDevice);

void wgpuQueueSubmit(WGPUQueue, size_t commandCount, const WGPUCommandBuffer* commands);
void wgpuQueueWriteBuffer(WGPUQueue, WGPUBuffer, uint64_t offset, const void* data, size_t size);
void wgpuQueueOnSubmittedWorkDone(WGPUQueue, WGPUQueueWorkDoneCallbackInfo);
void wgpuQueueRelease(WGPUQueue);

void wgpuBufferMapAsync(WGPUBuffer, WGPUMapMode, size_t offset, size_t size, WGPUBufferMapCallbackInfo);
const void* wgpuBufferGetConstMappedRange(WGPUBuffer, size_t offset, size_t size);
void* wgpuBufferGetMappedRange(WGPUBuffer, size_t offset, size_t size);
void wgpuBufferUnmap(WGPUBuffer);
uint64_t wgpuBufferGetSize(WGPUBuffer);
void wgpuBufferDestroy(WGPUBuffer);
void wgpuBufferAddRef(WGPUBuffer);
void wgpuBufferRelease(WGPUBuffer);

void wgpuShaderModuleGetCompilationInfo(WGPUShaderModule, WGPUCompilationInfoCallbackInfo);
void wgpuShaderModuleRelease(WGPUShaderModule);
WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline, uint32_t groupIndex);
void wgpuComputePipelineRelease(WGPUComputePipeline);
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout);
void wgpuBindGroupRelease(WGPUBindGroup);

WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder, const WGPUComputePassDescriptor*);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder, WGPUBuffer src, uint64_t srcOffset, WGPUBuffer dst,
                                          uint64_t dstOffset, uint64_t size);
void wgpuCommandEncoderClearBuffer(WGPUCommandEncoder, WGPUBuffer, uint64_t offset, uint64_t size);
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder, WGPUQuerySet, uint32_t firstQuery, uint32_t queryCount,
                                       WGPUBuffer destination, uint64_t destinationOffset);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder, const WGPUCommandBufferDescriptor*);
void wgpuCommandEncoderRelease(WGPUCommandEncoder);
void wgpuCommandBufferRelease(WGPUCommandBuffer);

void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder, WGPUComputePipeline);
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder, uint32_t groupIndex, WGPUBindGroup,
                                        size_t dynamicOffsetCount, const uint32_t* dynamicOffsets);
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder, uint32_t x, uint32_t y, uint32_t z);
void wgpuComputePassEncoderDispatchWorkgroupsIndirect(WGPUComputePassEncoder, WGPUBuffer, uint64_t offset);
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder);
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder);

void wgpuQuerySetRelease(WGPUQuerySet);
void wgpuQuerySetDestroy(WGPUQuerySet);

}  // extern "C"
