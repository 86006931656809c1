#include "gpu/recorder.h"

#include "common/error.h"
#include "gpu/profiler.h"

namespace ember::gpu {

Recorder::Recorder(const Device& device, Profiler* profiler, Timing timing, std::string whole_region)
    : device_(device), profiler_(profiler), timing_(timing), whole_region_(std::move(whole_region)) {}

Recorder::~Recorder() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
  }
  if (encoder_) wgpuCommandEncoderRelease(encoder_);
}

void Recorder::ensure_encoder() {
  if (!encoder_) encoder_ = wgpuDeviceCreateCommandEncoder(device_.get(), nullptr);
}

void Recorder::begin_pass(const std::string& region) {
  ensure_encoder();
  if (profiler_ && (timing_ == Timing::PerDispatch || !pass_)) {
    end_pass();  // one timed pass per dispatch, or one for the whole submit
    WGPUPassTimestampWrites tw = profiler_->next_region(timing_ == Timing::PerDispatch ? region : whole_region_);
    WGPUComputePassDescriptor desc{};
    desc.timestampWrites = &tw;
    pass_ = wgpuCommandEncoderBeginComputePass(encoder_, &desc);
  } else if (!pass_) {
    pass_ = wgpuCommandEncoderBeginComputePass(encoder_, nullptr);
  }
}

void Recorder::end_pass() {
  if (!pass_) return;
  wgpuComputePassEncoderEnd(pass_);
  wgpuComputePassEncoderRelease(pass_);
  pass_ = nullptr;
}

bool Recorder::begin_dispatch(const Kernel& kernel, const BindGroup& group, const std::string& region) {
  const std::string& name = region.empty() ? kernel.label() : region;
  dispatches_++;  // a left-out dispatch is still one of the graph's (Lfm2Model counts them)
  if (!left_out_.empty() && name == left_out_) return false;
  begin_pass(name);
  wgpuComputePassEncoderSetPipeline(pass_, kernel.pipeline());
  wgpuComputePassEncoderSetBindGroup(pass_, 0, group.get(), 0, nullptr);
  return true;
}

void Recorder::dispatch(const Kernel& kernel, const BindGroup& group, uint32_t x, uint32_t y, uint32_t z,
                        const std::string& region) {
  const uint32_t max = device_.limits().maxComputeWorkgroupsPerDimension;
  if (x > max || y > max || z > max)
    throw Error("dispatch of " + std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z) +
                    " workgroups exceeds maxComputeWorkgroupsPerDimension (" + std::to_string(max) + ")",
                "kernel " + kernel.label());
  if (x == 0 || y == 0 || z == 0) return;
  if (begin_dispatch(kernel, group, region)) wgpuComputePassEncoderDispatchWorkgroups(pass_, x, y, z);
}

void Recorder::dispatch_indirect(const Kernel& kernel, const BindGroup& group, const Buffer& args, uint64_t offset,
                                 const std::string& region) {
  if (begin_dispatch(kernel, group, region)) wgpuComputePassEncoderDispatchWorkgroupsIndirect(pass_, args.get(), offset);
}

void Recorder::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size) {
  ensure_encoder();
  end_pass();
  wgpuCommandEncoderCopyBufferToBuffer(encoder_, src.get(), src_offset, dst.get(), dst_offset, size);
}

void Recorder::clear(const Buffer& buffer, uint64_t offset, uint64_t size) {
  ensure_encoder();
  end_pass();
  wgpuCommandEncoderClearBuffer(encoder_, buffer.get(), offset, size == WGPU_WHOLE_SIZE ? buffer.size() - offset : size);
}

void Recorder::watch(const StatusWord& word) {
  for (const StatusWord& w : watched_)
    if (w.buffer == word.buffer && w.offset == word.offset) return;
  watched_.push_back(word);
}

void Recorder::submit() {
  ensure_encoder();
  end_pass();
  if (profiler_) profiler_->resolve(encoder_);
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(encoder_, nullptr);
  wgpuCommandEncoderRelease(encoder_);
  encoder_ = nullptr;
  device_.submit(cmd);
  wgpuCommandBufferRelease(cmd);
  if (!watched_.empty()) device_.owe_status(take_watched());
}

}  // namespace ember::gpu
