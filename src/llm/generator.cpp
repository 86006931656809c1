#include "llm/generator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

#include "common/error.h"

namespace ember::llm {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

Generator::Generator(Lfm2Model& model, uint32_t sample_vocab)
    : model_(model), sample_vocab_(sample_vocab ? std::min(sample_vocab, model.vocab()) : model.vocab()) {
  const auto& device = model.device();
  kernels::SamplerConfig config = llm::sampler_config(sample_vocab_, model.sample_partials());
  // Greedy sampling runs in one dispatch (sampler_config), and here the pick also embeds the id it
  // picks for the next step: each a dependent dispatch a token less. Both, where the device binds
  // the storage buffers that takes (8 or 9); else the embedding; else the one dispatch alone (4;
  // WebGPU guarantees 8).
  const kernels::PickEmbedding embedding = model.pick_embedding();
  config.embed_rows = embedding.table.rows;
  config.embed_cols = embedding.table.cols;
  config.embed_asymmetric = embedding.table.asymmetric();
  const uint32_t limit = device.limits().maxStorageBuffersPerShaderStage;
  if (kernels::Sampler::storage_buffers(config) > limit) config.one_dispatch_greedy = false;
  if (kernels::Sampler::storage_buffers(config) > limit) {
    config.embed_rows = config.embed_cols = 0;
    config.one_dispatch_greedy = true;
  }
  sampler_ = std::make_unique<kernels::Sampler>(model.kernels(), config);
  params_stride_ = std::max<uint64_t>(sizeof(kernels::SamplerParams), device.limits().minStorageBufferOffsetAlignment);
  params_ring_ = device.create_storage(Lfm2Model::kStepRing * params_stride_, "sampler.params_ring");
  for (uint32_t k = 0; k < Lfm2Model::kStepRing; k++)
    groups_.push_back(sampler_->bind({&model.logits()}, {&model.tokens()}, {&params_ring_, k * params_stride_, sizeof(kernels::SamplerParams)},
                                     config.embed_rows ? &embedding : nullptr));
}

Generator::~Generator() = default;

GenerationStats Generator::generate(std::span<const uint32_t> prompt, const SamplingOptions& sampling,
                                    const GenerateOptions& options, const std::function<bool(uint32_t)>& on_token) {
  sampling.validate();
  const auto& device = model_.device();
  const uint32_t depth = std::max<uint32_t>(1, options.in_flight);
  // At most half the depth: a submit then runs while the next one is recorded (a batch of the
  // whole depth leaves the GPU idle for that: 64 / 64 measured far slower than 32 / 64).
  const uint32_t batch = std::clamp<uint32_t>(options.steps_per_submit, 1, std::min(std::max(1u, depth / 2), Lfm2Model::kStepRing));
  // A submit's read-back: its ids at 0 (up to kStepRing of them), then each step's logits if asked.
  constexpr uint64_t kIdBytes = Lfm2Model::kStepRing * 4;
  const uint64_t logits_bytes = options.on_logits ? uint64_t(model_.vocab()) * 4 : 0;
  // A read-back slot per submit in flight: at most the ramp's first submits (1, 1, 2, 4, ...)
  // that fit in `depth` steps, since later ones are larger.
  uint32_t max_submits = 0;
  for (uint32_t steps = 0, n = 1; steps + n <= depth; n = std::clamp(steps, 1u, batch)) {
    steps += n;
    max_submits++;
  }
  const uint64_t readback_bytes = kIdBytes + batch * logits_bytes;
  if (!readback_ || readback_->payload_bytes() != readback_bytes || readback_->slots() < max_submits + 1)
    readback_ = std::make_unique<gpu::ReadbackRing>(device, readback_bytes, max_submits + 1, "sampled.readback");
  readback_->release_all();  // slots an earlier call left in flight when it failed

  GenerationStats stats;
  stats.prompt_tokens = static_cast<uint32_t>(prompt.size() + pending_.size());
  const auto t0 = Clock::now();
  std::vector<uint32_t> feed(pending_.begin(), pending_.end());
  feed.insert(feed.end(), prompt.begin(), prompt.end());
  pending_.clear();
  if (feed.empty()) throw Error("nothing to generate from: the prompt is empty", "generate", "give a prompt");
  model_.prefill(feed);

  // A step: [decode the previous id (not for the first step)] + sample the next id into
  // tokens[position]. The sampler reads the logits the decode just wrote; the next decode reads
  // the id the sampler just wrote. Up to `batch` steps per submit; their ids sit at consecutive
  // positions, read back with one copy at the end of the submit.
  struct InFlight {
    uint32_t slot;       // read-back ring slot
    uint32_t steps = 0;  // ids (and logits) in it
  };
  std::deque<InFlight> flight;
  uint32_t next_slot = 0, submitted = 0, kept = 0, last_id = 0, steps_in_flight = 0;
  bool stop = false;
  Clock::time_point first_token_at{};
  const uint32_t capacity = model_.capacity();
  // Step k samples with the parameters at ring slot k % kStepRing. A submit's slots are written
  // by one queue write (two where the ring wraps), which lands before its commands: no copy in the
  // command stream, and one write a submit rather than one a step.
  std::vector<uint8_t> slot_bytes;  // the parameters of this submit's steps, params_stride_ apart
  uint32_t first_slot = 0;
  auto write_params = [&] {
    const uint64_t n = slot_bytes.size() / params_stride_, run = std::min<uint64_t>(n, Lfm2Model::kStepRing - first_slot);
    device.upload(params_ring_, first_slot * params_stride_, std::span<const uint8_t>(slot_bytes.data(), run * params_stride_));
    if (run < n) device.upload(params_ring_, 0, std::span<const uint8_t>(slot_bytes).subspan(run * params_stride_));
    slot_bytes.clear();
  };
  auto record_step = [&](gpu::Recorder& rec, InFlight& f) {
    if (submitted > 0) model_.record_decode(rec);
    const uint32_t slot = submitted % Lfm2Model::kStepRing;
    if (slot_bytes.empty()) first_slot = slot;
    const auto params = sampling.gpu_params(sample_vocab_, model_.position(), submitted);
    slot_bytes.resize(slot_bytes.size() + params_stride_);
    std::memcpy(slot_bytes.data() + slot_bytes.size() - params_stride_, &params, sizeof params);
    if (sampling.greedy()) sampler_->record_greedy(rec, groups_[slot]);
    else sampler_->record_sample(rec, groups_[slot]);
    if (sampler_->config().embed_rows) model_.picked_embedded();
    if (logits_bytes) rec.copy(model_.logits(), 0, readback_->buffer(f.slot), kIdBytes + f.steps * logits_bytes, logits_bytes);
    f.steps++;
    submitted++;
  };
  auto can_submit = [&] { return !stop && submitted < std::max<uint32_t>(1, options.max_tokens) && model_.position() + 1 < capacity; };
  while (true) {
    // Keep up to `depth` steps ahead, in submits of as many steps as went before, up to `batch`
    // (1, 1, 2, 4, ...): the first step goes alone, and a stop never discards more than about
    // the steps it kept.
    while (can_submit()) {
      const uint32_t n = std::clamp(submitted, 1u, batch);
      if (steps_in_flight + n > depth) break;
      // Ids already back go to the caller before more is recorded: recording a submit takes the
      // CPU a while, and an id waiting behind it would stream late.
      if (!flight.empty() && readback_->ready(flight.front().slot)) break;
      InFlight f{next_slot};
      next_slot = (next_slot + 1) % readback_->slots();
      gpu::Recorder rec(device);
      const uint32_t first = model_.position() + (submitted > 0 ? 1 : 0);  // where the first step's id goes
      while (f.steps < n && can_submit()) record_step(rec, f);
      rec.copy(model_.tokens(), uint64_t(first) * 4, readback_->buffer(f.slot), 0, uint64_t(f.steps) * 4);
      write_params();
      readback_->submit(rec, f.slot);  // with the status words of the decode steps and picks it holds
      steps_in_flight += f.steps;
      flight.push_back(f);
    }
    if (flight.empty()) break;
    InFlight& f = flight.front();
    // Throws, naming the kernel, where a kernel of this submit gave up: its ids are never used.
    const uint8_t* mapped = readback_->read(f.slot, "generate").data();
    for (uint32_t i = 0; i < f.steps && !stop; i++) {  // steps past a stop are discarded
      uint32_t id;
      std::memcpy(&id, mapped + 4 * i, 4);
      if (stats.generated == 0) {
        first_token_at = Clock::now();
        stats.ttft_ms = ms_since(t0);
      }
      stats.generated++;
      kept++;
      last_id = id;
      if (logits_bytes) {
        std::vector<float> logits(model_.vocab());
        std::memcpy(logits.data(), mapped + kIdBytes + i * logits_bytes, logits_bytes);
        options.on_logits(logits);
      }
      bool is_stop = std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
      bool keep_going = on_token(id);
      if (is_stop || !keep_going) {
        stop = true;
        stats.stopped = is_stop;
      }
    }
    readback_->release(f.slot);
    steps_in_flight -= f.steps;
    flight.pop_front();
  }
  // Every step decodes the id sampled by the one before, so the last kept id is not in the
  // caches yet. The caches are exact (continuable) only if no step was discarded.
  if (kept == submitted) pending_ = {last_id};
  stats.total_ms = ms_since(t0);
  if (stats.generated > 1)
    stats.decode_tok_s = (stats.generated - 1) / (std::chrono::duration<double>(Clock::now() - first_token_at).count());
  return stats;
}

}  // namespace ember::llm
