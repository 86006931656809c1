#include "server/scheduler.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "server/api_error.h"

namespace ember::server {

Scheduler::Scheduler(llm::Session& session, const SchedulerOptions& options) : session_(session), options_(options) {
  const auto& pack = session.pack();
  if (options.parallel < 1 || options.parallel < pack.runtime().max_queries)
    throw Error("--parallel " + std::to_string(options.parallel) + " is below the pack's maxQueries (" +
                    std::to_string(pack.runtime().max_queries) + ")",
                "--parallel", "give --parallel >= " + std::to_string(std::max<int64_t>(1, pack.runtime().max_queries)));
  llm::Lfm2Model& base = session.model();
  capacity_ = base.capacity();
  // Slot i is slot i of the model's caches when they have a slot per sequence (the batched
  // decoder steps them all in one dispatch per kernel); else every slot has caches of its own.
  const bool pooled = base.caches().slots() >= options.parallel && base.cache_slot() == 0;
  sample_vocab_ = std::min<uint32_t>(static_cast<uint32_t>(session.tokenizer().vocab_size()), base.vocab());
  // One sampler serves every slot: its scratch buffer is reused by dispatches that run in order
  // within the submit.
  sampler_ = std::make_unique<kernels::Sampler>(base.kernels(), llm::sampler_config(sample_vocab_, base.sample_partials()));
  const auto& device = session.device();
  slots_.resize(options.parallel);
  for (uint32_t i = 0; i < options.parallel; i++) {
    Slot& s = slots_[i];
    if (i == 0) {
      s.model = &base;
    } else {
      llm::ModelOptions mo{.quiet = true};
      if (pooled) {
        mo.caches = base.shared_caches();
        mo.cache_slot = i;
      }
      s.owned = std::make_unique<llm::Lfm2Model>(base, mo);
      s.model = s.owned.get();
    }
    s.params = device.create_storage(sizeof(kernels::SamplerParams), "slot.sampler.params");
    s.groups = sampler_->bind({&s.model->logits()}, {&s.model->tokens()}, {&s.params});
  }
  if (options.parallel > 1 && pooled && llm::Lfm2BatchDecoder::unsupported(base).empty()) {
    std::vector<llm::Lfm2Model*> rows;
    for (auto& s : slots_) rows.push_back(s.model);
    batch_ = std::make_unique<llm::Lfm2BatchDecoder>(rows);
    for (uint32_t i = 0; i < options.parallel; i++)
      slots_[i].batch_groups = sampler_->bind(batch_->logits_row(i), {&slots_[i].model->tokens()}, {&slots_[i].params});
  }
  controls_ = std::make_unique<RowControlsContext>(base.kernels(), session.tokenizer(), sample_vocab_, session.stop_ids());
  for (uint32_t i = 0; i < options.parallel; i++) {
    Slot& s = slots_[i];
    const gpu::Binding row = batch_ ? batch_->logits_row(i) : gpu::Binding{};
    s.controls = std::make_unique<RowControls>(*controls_, device, gpu::Binding{&s.model->logits()}, batch_ ? &row : nullptr,
                                               gpu::Binding{&s.model->tokens()});
  }
  readback_ = std::make_unique<gpu::ReadbackRing>(device, uint64_t(options.parallel) * (4 + kernels::Logprobs::kOutBytes), 2, "slots.readback");
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown(std::chrono::milliseconds(0)); }

std::shared_ptr<Job> Scheduler::submit(JobRequest request) {
  auto job = std::make_shared<Job>(std::move(request), session_.tokenizer(), session_.stop_ids());
  {
    std::lock_guard lock(mutex_);
    if (!accepting_) throw ApiError::busy("the server is shutting down");
    if (active_ + waiting_.size() >= options_.parallel + options_.queue)
      throw ApiError::busy("all " + std::to_string(options_.parallel) + " sequence slots and " + std::to_string(options_.queue) +
                           " queue places are taken; retry later");
    waiting_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

void Scheduler::shutdown(std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  accepting_ = false;
  if (!thread_.joinable()) return;
  cv_.wait_for(lock, grace, [&] { return active_ == 0 && waiting_.empty(); });
  cancel_all_ = stop_ = true;
  lock.unlock();
  cv_.notify_all();
  thread_.join();
}

uint32_t Scheduler::active() const {
  std::lock_guard lock(mutex_);
  return active_;
}
uint32_t Scheduler::queued() const {
  std::lock_guard lock(mutex_);
  return static_cast<uint32_t>(waiting_.size());
}
uint64_t Scheduler::steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}
uint64_t Scheduler::batched_rows() const {
  std::lock_guard lock(mutex_);
  return batched_rows_;
}

void Scheduler::end(Slot& slot, const std::string* error) {
  std::shared_ptr<Job> job = std::move(slot.job);
  {
    // The slot is free before the client hears the answer: a client that sends its next
    // request as soon as this one ends must find room, not a spurious 503.
    std::lock_guard lock(mutex_);
    active_--;
  }
  if (error) job->fail(*error);
  else job->complete();
  if (on_done) on_done(*job);
  cv_.notify_all();  // shutdown() waits for active_ == 0
}

// Moves waiting jobs into free slots (under the lock); the caller prefills them.
void Scheduler::admit(std::vector<Slot*>& joined) {
  std::lock_guard lock(mutex_);
  for (auto& s : slots_) {
    if (cancel_all_ && s.job) s.job->cancel();
    if (s.job || waiting_.empty()) continue;
    s.job = waiting_.front();
    waiting_.pop_front();
    if (cancel_all_) s.job->cancel();
    s.steps = s.submitted = 0;
    active_++;
    joined.push_back(&s);
  }
}

void Scheduler::run() {
  while (true) {
    bool done = false;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !waiting_.empty() || active_ > 0; });
      done = stop_ && waiting_.empty() && active_ == 0;
    }
    if (done) {
      try {
        finish_in_flight(/*discard=*/true);  // nothing may still write into a buffer we free
      } catch (const std::exception&) {
        // Its ids are dropped anyway, and every job has ended: a give-up here costs no answer.
      }
      return;
    }
    std::vector<Slot*> joined;
    admit(joined);
    for (Slot* s : joined) {
      if (s->job->cancelled()) {
        end(*s);
        continue;
      }
      try {
        s->controls->start(s->job->request());
      } catch (const std::exception& e) {
        const std::string error = std::string("the grammar does not parse: ") + e.what();
        end(*s, &error);
        continue;
      }
      try {
        s->model->reset();  // nothing of the slot's previous request survives
        s->model->prefill(s->job->request().prompt);
      } catch (const std::exception& e) {
        const std::string error = std::string("prefill failed: ") + e.what();
        end(*s, &error);
      }
    }
    for (auto& s : slots_)  // a client gone between steps frees its slot now
      if (s.job && s.job->cancelled()) end(s);
    try {
      if (active() == 0) {  // every job of the step in flight has ended: drop its ids
        finish_in_flight(/*discard=*/true);
        continue;
      }
      step();
    } catch (const std::exception& e) {  // a GPU failure ends every request in the step
      in_flight_.reset();
      readback_->release_all();
      const std::string error = std::string("generation failed: ") + e.what();
      for (auto& s : slots_)
        if (s.job) end(s, &error);
    }
  }
}

bool Scheduler::is_end(uint32_t id) const {
  const auto& ends = session_.stop_ids();
  return std::find(ends.begin(), ends.end(), id) != ends.end();
}

// After `sampled` ids, a job may take another: under its max_tokens and with a position left.
bool Scheduler::may_sample_more(const JobRequest& r, uint32_t sampled) const {
  return sampled < std::max<uint32_t>(1, r.max_tokens) && r.prompt.size() + sampled < capacity_;
}

void Scheduler::step() {
  const auto& device = session_.device();
  // llm::Generator's step for each slot that may go on: decode the previous id (not for the
  // first), sample the next into tokens[position], copy it out (here to this slot's word of a
  // read-back buffer). The decodes of two or more slots run as one batched step (row i = slot i).
  std::vector<uint32_t> decoding;
  std::vector<Slot*> stepping;
  bool constrained = false;
  for (uint32_t i = 0; i < slots_.size(); i++) {
    Slot& s = slots_[i];
    if (!s.job || !may_sample_more(s.job->request(), s.submitted)) continue;
    stepping.push_back(&s);
    if (s.submitted > 0) decoding.push_back(i);
    constrained = constrained || s.controls->constrained();
  }
  if (stepping.empty()) return finish_in_flight();
  gpu::Recorder rec(device);
  const bool batched = batch_ && decoding.size() >= 2;
  if (batched) batch_->record(rec, decoding);
  std::vector<std::pair<Slot*, std::shared_ptr<Job>>> sampling;
  if (constrained) {
    // A grammar's mask needs the id in flight: submit this step's decodes now, read that id back
    // while the GPU runs them, then submit the samples with the masks (their status words with
    // them, so the read-back checks the decodes' too).
    for (Slot* s : stepping)
      if (s->submitted > 0 && !batched) s->model->record_decode(rec);
    std::vector<gpu::StatusWord> words = rec.take_watched();
    rec.submit();
    for (const auto& w : words) rec.watch(w);
    finish_in_flight();
    for (Slot* s : stepping) {
      if (!s->job) continue;  // ended with the id just read: its decode ran for nothing
      try {
        s->controls->prepare();
      } catch (const std::exception& e) {  // this request's grammar is stuck: it alone fails
        const std::string error = std::string("constrained decoding failed: ") + e.what();
        end(*s, &error);
        continue;
      }
      sampling.emplace_back(s, s->job);
    }
  } else {
    for (Slot* s : stepping) {
      s->controls->prepare();  // (logit_bias only: never throws)
      sampling.emplace_back(s, s->job);
    }
  }
  InFlight f;
  f.readback = next_readback_;
  next_readback_ ^= 1u;
  f.batched_rows = batched ? decoding.size() : 0;
  for (auto& [s, job] : sampling) {
    const bool from_batch = batched && s->submitted > 0;
    if (!constrained && s->submitted > 0 && !from_batch) s->model->record_decode(rec);
    const auto& options = job->request().sampling;
    const uint32_t pos = s->model->position();
    kernels::upload_params(device, s->params, options.gpu_params(sample_vocab_, pos, s->submitted));
    const auto& groups = from_batch ? s->batch_groups : s->groups;
    s->controls->record_edit(rec, from_batch);
    if (options.greedy()) sampler_->record_greedy(rec, groups);
    else sampler_->record_sample(rec, groups);
    const uint64_t row = static_cast<uint64_t>(s - slots_.data());
    rec.copy(s->model->tokens(), uint64_t(pos) * 4, readback_->buffer(f.readback), row * 4, 4);
    s->controls->record_logprobs(rec, from_batch, pos, readback_->buffer(f.readback), logprobs_offset(row));
    s->submitted++;
    f.rows.emplace_back(s, job);
  }
  readback_->submit(rec, f.readback);
  finish_in_flight();
  in_flight_ = std::move(f);
}

void Scheduler::finish_in_flight(bool discard) {
  if (!in_flight_) return;
  InFlight f = std::move(*in_flight_);
  in_flight_.reset();
  // Throws, naming the kernel, where a kernel of the step gave up: its ids are never used.
  std::vector<uint32_t> words(readback_->payload_bytes() / 4);
  std::memcpy(words.data(), readback_->read(f.readback, "decode step").data(), words.size() * 4);
  readback_->release(f.readback);
  if (discard) return;
  {
    std::lock_guard lock(mutex_);
    steps_++;
    batched_rows_ += f.batched_rows;
  }
  for (auto& [s, job] : f.rows) {
    if (s->job != job) continue;  // ended (stop, cancel) while this step ran: its id is dropped
    const size_t row = static_cast<size_t>(s - slots_.data());
    const uint32_t id = words[row];
    s->steps++;
    const auto& r = job->request();
    if (r.logprobs) job->set_logprobs(kernels::Logprobs::unpack(std::span(words).subspan(logprobs_offset(row) / 4), r.top_logprobs));
    if (!is_end(id) && !s->controls->accept(id)) {  // the mask allowed it: a grammar the matcher cannot follow
      const std::string error = "constrained decoding failed: the grammar refuses token " + std::to_string(id) + ", which its mask allowed";
      end(*s, &error);
      continue;
    }
    const bool go_on = job->accept(id);
    if (!go_on || !may_sample_more(job->request(), s->steps)) end(*s);
  }
}

}  // namespace ember::server
