#include "gpu/device.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace ember::gpu {
namespace {

std::string to_string(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}

WGPUStringView view(const std::string& s) { return WGPUStringView{s.data(), s.size()}; }

const char* error_type_name(WGPUErrorType t) {
  switch (t) {
    case WGPUErrorType_Validation: return "validation error";
    case WGPUErrorType_OutOfMemory: return "out of GPU memory";
    case WGPUErrorType_Internal: return "internal error";
    default: return "error";
  }
}

}  // namespace

struct Device::State {
  Instance instance;
  AdapterHandle adapter;
  AdapterDescription description;
  DeviceHandle device;
  QueueHandle queue;
  WGPULimits limits{};
  bool f16 = false, subgroups = false, timestamps = false, exact_timestamps = false;

  // Errors Dawn reports from its callbacks, surfaced by check(). Dawn may call from another thread.
  mutable std::mutex mu;
  mutable std::string pending_error;
  mutable bool lost = false;
  mutable bool destroying = false;
  // Marks (see mark()): the last one handed out and the last one whose work is done. The queue
  // completes work in order, so one counter says which are done.
  mutable uint64_t marks_made = 0, marks_done = 0;
  // Status words owed by submits (owe_status), each buffer held by a reference of its own so that
  // a word outlives the object that owned its buffer until it is read.
  struct Owed {
    WGPUBuffer buffer;
    uint64_t offset;
    std::string what, fix;
  };
  mutable std::vector<Owed> owed;
  ~State() {
    for (const Owed& o : owed) wgpuBufferRelease(o.buffer);
  }
};

Device::Device(std::unique_ptr<State> state) : s_(std::move(state)) {}
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;
Device::~Device() {
  if (s_ && s_->device) {
    s_->destroying = true;
    wgpuDeviceDestroy(s_->device.get());
    // Let Dawn deliver the device-lost callback while `s_` is still alive.
    wgpuInstanceProcessEvents(s_->instance.get());
  }
}

Device Device::open(const DeviceOptions& options) {
  auto s = std::make_unique<State>();
  Instance::Found found = s->instance.select(options.adapter);
  s->adapter = std::move(found.adapter);
  s->description = std::move(found.description);
  const AdapterDescription& d = s->description;

  std::vector<WGPUFeatureName> features;
  auto wanted = [&](bool has, const char* name) { return has && !options.without.count(name); };
  if (wanted(d.shader_f16, "shader-f16")) features.push_back(WGPUFeatureName_ShaderF16);
  if (wanted(d.subgroups, "subgroups")) features.push_back(WGPUFeatureName_Subgroups);
  if (wanted(d.timestamp_query, "timestamp-query")) features.push_back(WGPUFeatureName_TimestampQuery);

  std::vector<const char*> enabled, disabled;
  if (!options.bounds_checks) enabled.push_back("disable_robustness");
  if (options.fast) enabled.push_back("skip_validation");
  if (options.profiling) disabled.push_back("timestamp_quantization");
  WGPUDawnTogglesDescriptor toggles{};
  toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
  toggles.enabledToggleCount = enabled.size();
  toggles.enabledToggles = enabled.data();
  toggles.disabledToggleCount = disabled.size();
  toggles.disabledToggles = disabled.data();

  WGPULimits limits = d.limits;
  WGPUDeviceDescriptor desc{};
  desc.nextInChain = &toggles.chain;
  std::string label = "ember";
  desc.label = view(label);
  desc.requiredFeatureCount = features.size();
  desc.requiredFeatures = features.data();
  desc.requiredLimits = &limits;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
  desc.deviceLostCallbackInfo.callback = [](const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView msg, void* u, void*) {
    auto* st = static_cast<State*>(u);
    std::lock_guard lock(st->mu);
    st->lost = true;
    if (!st->destroying && reason != WGPUDeviceLostReason_Destroyed && reason != WGPUDeviceLostReason_CallbackCancelled)
      st->pending_error += "device lost: " + to_string(msg) + "\n";
  };
  desc.deviceLostCallbackInfo.userdata1 = s.get();
  desc.uncapturedErrorCallbackInfo.callback = [](const WGPUDevice*, WGPUErrorType type, WGPUStringView msg, void* u, void*) {
    auto* st = static_cast<State*>(u);
    std::lock_guard lock(st->mu);
    st->pending_error += std::string(error_type_name(type)) + ": " + to_string(msg) + "\n";
  };
  desc.uncapturedErrorCallbackInfo.userdata1 = s.get();

  struct Result {
    WGPUDevice device = nullptr;
    std::string message;
    bool done = false;
  } r;
  WGPURequestDeviceCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice dev, WGPUStringView msg, void* u, void*) {
    auto* res = static_cast<Result*>(u);
    res->device = status == WGPURequestDeviceStatus_Success ? dev : nullptr;
    res->message = to_string(msg);
    res->done = true;
  };
  cb.userdata1 = &r;
  wgpuAdapterRequestDevice(s->adapter.get(), &desc, cb);
  s->instance.wait_until([&] { return r.done; });
  if (!r.device) throw Error("could not create a device on adapter '" + d.name() + "': " + r.message, "gpu");
  s->device = DeviceHandle(r.device);
  s->queue = QueueHandle(wgpuDeviceGetQueue(r.device));
  wgpuDeviceGetLimits(r.device, &s->limits);
  s->f16 = wgpuDeviceHasFeature(r.device, WGPUFeatureName_ShaderF16);
  s->subgroups = wgpuDeviceHasFeature(r.device, WGPUFeatureName_Subgroups);
  s->timestamps = wgpuDeviceHasFeature(r.device, WGPUFeatureName_TimestampQuery);
  s->exact_timestamps = s->timestamps && options.profiling;
  return Device(std::move(s));
}

WGPUDevice Device::get() const { return s_->device.get(); }
WGPUQueue Device::queue() const { return s_->queue.get(); }
const Instance& Device::instance() const { return s_->instance; }
const AdapterDescription& Device::adapter() const { return s_->description; }
const WGPULimits& Device::limits() const { return s_->limits; }
bool Device::has_f16() const { return s_->f16; }
bool Device::has_subgroups() const { return s_->subgroups; }
bool Device::has_timestamps() const { return s_->timestamps; }
bool Device::exact_timestamps() const { return s_->exact_timestamps; }
uint32_t Device::subgroup_size() const { return s_->description.subgroup_min; }

void Device::check(const std::string& context) const {
  wgpuInstanceProcessEvents(s_->instance.get());
  std::vector<State::Owed> owed;
  {
    std::lock_guard lock(s_->mu);
    if (!s_->pending_error.empty()) {
      std::string msg = s_->pending_error;
      // A device error is sticky: the device stays unusable, so later checks keep failing.
      throw Error("WebGPU " + msg.substr(0, msg.size() - 1), context);
    }
    if (s_->lost) throw Error("the WebGPU device is lost", context, "restart ember; if it repeats, update the GPU driver");
    std::swap(owed, s_->owed);
  }
  if (owed.empty()) return;
  // One copy of every owed word into one staging buffer, one map (whose own check finds none owed).
  struct Release {
    std::vector<State::Owed>& words;
    ~Release() {
      for (const State::Owed& o : words) wgpuBufferRelease(o.buffer);
    }
  } release{owed};
  const uint64_t bytes = owed.size() * 4;
  Buffer staging = create_buffer(bytes, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "status words.readback");
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(get(), nullptr);
  for (size_t i = 0; i < owed.size(); i++) wgpuCommandEncoderCopyBufferToBuffer(enc, owed[i].buffer, owed[i].offset, staging.get(), 4 * i, 4);
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
  submit(cmd);
  wgpuCommandBufferRelease(cmd);
  wgpuCommandEncoderRelease(enc);
  std::vector<uint32_t> words(owed.size());
  map_read(staging.get(), bytes, [&](const uint8_t* p) { std::memcpy(words.data(), p, bytes); });
  for (size_t i = 0; i < owed.size(); i++)
    if (words[i] != 0) throw Error(owed[i].what, context, owed[i].fix);
}

void Device::owe_status(std::span<const StatusWord> words) const {
  std::lock_guard lock(s_->mu);
  for (const StatusWord& w : words) {
    const WGPUBuffer b = w.buffer->get();
    if (std::any_of(s_->owed.begin(), s_->owed.end(), [&](const State::Owed& o) { return o.buffer == b && o.offset == w.offset; })) continue;
    wgpuBufferAddRef(b);
    s_->owed.push_back({b, w.offset, w.what, w.fix});
  }
}

void Device::scoped(const std::string& context, const std::function<void()>& fn) const {
  WGPUDevice dev = get();
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Internal);
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_OutOfMemory);
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
  std::exception_ptr thrown;
  try {
    fn();
  } catch (...) {
    thrown = std::current_exception();
  }
  struct Pop {
    std::string message;
    bool done = false;
  } pops[3];
  for (Pop& p : pops) {
    WGPUPopErrorScopeCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView msg, void* u, void*) {
      auto* pop = static_cast<Pop*>(u);
      if (type != WGPUErrorType_NoError) pop->message = std::string(error_type_name(type)) + ": " + to_string(msg);
      pop->done = true;
    };
    cb.userdata1 = &p;
    wgpuDevicePopErrorScope(dev, cb);
  }
  s_->instance.wait_until([&] { return pops[0].done && pops[1].done && pops[2].done; });
  if (thrown) std::rethrow_exception(thrown);
  for (const Pop& p : pops)
    if (!p.message.empty()) throw Error("WebGPU " + p.message, context);
}

Buffer Device::create_buffer(uint64_t size, WGPUBufferUsage usage, const std::string& label) const {
  if (size > s_->limits.maxBufferSize)
    throw Error("buffer of " + std::to_string(size) + " bytes exceeds the adapter's maxBufferSize (" +
                    std::to_string(s_->limits.maxBufferSize) + ")",
                label, "split the data into several buffers");
  Buffer b;
  b.size_ = (size + 3) & ~uint64_t(3);  // WebGPU copies move whole 4-byte words
  b.label_ = label;
  WGPUBufferDescriptor desc{};
  desc.label = view(b.label_);
  desc.usage = usage;
  desc.size = b.size_;
  scoped("creating buffer '" + label + "' (" + std::to_string(size) + " bytes)",
         [&] { b.handle_ = BufferHandle(wgpuDeviceCreateBuffer(get(), &desc)); });
  return b;
}

Buffer Device::create_storage(uint64_t size, const std::string& label) const {
  return create_buffer(size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, label);
}

void Device::upload(const Buffer& dst, uint64_t offset, std::span<const uint8_t> bytes) const {
  if (offset + bytes.size() > dst.size())
    throw Error("upload of " + std::to_string(bytes.size()) + " bytes at offset " + std::to_string(offset) +
                    " overruns buffer of " + std::to_string(dst.size()),
                dst.label());
  if (bytes.empty()) return;
  if (bytes.size() % 4 == 0 && offset % 4 == 0) {
    wgpuQueueWriteBuffer(queue(), dst.get(), offset, bytes.data(), bytes.size());
  } else {  // writeBuffer moves whole words: pad the tail with zeros
    std::vector<uint8_t> padded((bytes.size() + 3) & ~size_t(3), 0);
    std::memcpy(padded.data(), bytes.data(), bytes.size());
    wgpuQueueWriteBuffer(queue(), dst.get(), offset, padded.data(), padded.size());
  }
}

void Device::submit(WGPUCommandBuffer commands) const { wgpuQueueSubmit(queue(), 1, &commands); }

void Device::wait_idle(const std::string& context) const {
  bool done = false;
  WGPUQueueWorkDoneCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* u, void*) { *static_cast<bool*>(u) = true; };
  cb.userdata1 = &done;
  wgpuQueueOnSubmittedWorkDone(queue(), cb);
  s_->instance.wait_until([&] { return done || s_->lost; });
  check(context);
}

uint64_t Device::mark() const {
  const uint64_t serial = ++s_->marks_made;
  WGPUQueueWorkDoneCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* state, void* serial) {
    auto* st = static_cast<State*>(state);
    st->marks_done = std::max(st->marks_done, uint64_t(reinterpret_cast<uintptr_t>(serial)));
  };
  cb.userdata1 = s_.get();
  cb.userdata2 = reinterpret_cast<void*>(uintptr_t(serial));
  wgpuQueueOnSubmittedWorkDone(queue(), cb);
  return serial;
}

void Device::wait_for(uint64_t mark, const std::string& context) const {
  s_->instance.wait_until([&] { return s_->marks_done >= mark || s_->lost; });
  check(context);
}

void Device::map_read(WGPUBuffer buffer, uint64_t size, const std::function<void(const uint8_t*)>& read) const {
  struct Map {
    bool done = false, ok = false;
    std::string message;
  } m;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView msg, void* u, void*) {
    auto* mm = static_cast<Map*>(u);
    mm->ok = status == WGPUMapAsyncStatus_Success;
    mm->message = to_string(msg);
    mm->done = true;
  };
  cb.userdata1 = &m;
  wgpuBufferMapAsync(buffer, WGPUMapMode_Read, 0, size, cb);
  s_->instance.wait_until([&] { return m.done || s_->lost; });
  try {
    check("reading back from the GPU");
  } catch (...) {
    if (m.ok) wgpuBufferUnmap(buffer);  // the buffer can be mapped again
    throw;
  }
  if (!m.ok) throw Error("mapping a readback buffer failed: " + m.message, "gpu");
  read(static_cast<const uint8_t*>(wgpuBufferGetConstMappedRange(buffer, 0, size)));
  wgpuBufferUnmap(buffer);
}

std::vector<uint8_t> Device::download(const Buffer& src, uint64_t offset, uint64_t size) const {
  if (offset + size > src.size())
    throw Error("download of " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                    " overruns buffer of " + std::to_string(src.size()),
                src.label());
  uint64_t padded = (size + 3) & ~uint64_t(3);
  Buffer staging = create_buffer(padded, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, src.label() + ".readback");
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(get(), nullptr);
  wgpuCommandEncoderCopyBufferToBuffer(enc, src.get(), offset, staging.get(), 0, padded);
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
  submit(cmd);
  wgpuCommandBufferRelease(cmd);
  wgpuCommandEncoderRelease(enc);
  std::vector<uint8_t> out(size);
  map_read(staging.get(), padded, [&](const uint8_t* p) { std::memcpy(out.data(), p, size); });
  return out;
}

}  // namespace ember::gpu
