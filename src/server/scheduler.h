// Continuous batching: `parallel` sequence slots (each an Lfm2Model with its own caches, sharing
// the session's GPU weights) decoded together. One scheduler thread owns the GPU; each step it
// records the decode of every active slot (one llm::Lfm2BatchDecoder step over their rows when
// two or more decode, so each weight is read once per step; a lone slot uses its model's own
// decode), then the GPU sample and the id copy of each slot, into one gpu::Recorder, submits
// once and reads all ids back from one buffer. While a request with a grammar decodes, a step is
// two submits: the decodes, then (once the previous ids are read and the masks made meanwhile)
// the samples (docs/structured-output.md). Requests join (prefill) and leave (stop, length,
// cancel) between steps. Beyond the slots a bounded queue waits; beyond the queue, submit()
// refuses with 503.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gpu/readback_ring.h"
#include "kernels/sampler.h"
#include "llm/lfm2_batch.h"
#include "llm/session.h"
#include "server/job.h"
#include "server/row_controls.h"

namespace ember::server {

struct SchedulerOptions {
  uint32_t parallel = 4;  // sequence slots
  uint32_t queue = 16;    // requests that may wait for a slot
};

class Scheduler {
 public:
  Scheduler(llm::Session& session, const SchedulerOptions& options);
  ~Scheduler();  // cancels what is left and joins the thread
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; throws ApiError (503) when every slot and queue place is taken or the
  // server is shutting down.
  std::shared_ptr<Job> submit(JobRequest request);

  // Stops admitting new requests, lets accepted ones finish for up to `grace`, then cancels the
  // rest and stops the thread.
  void shutdown(std::chrono::milliseconds grace);

  // Called on the scheduler thread when a job ends (metrics). Set before the first submit.
  std::function<void(const Job&)> on_done;

  uint32_t capacity() const { return capacity_; }  // positions per slot (prompt + generated)
  uint32_t parallel() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t active() const;
  uint32_t queued() const;
  uint64_t steps() const;
  uint64_t batched_rows() const;  // sequence decodes run by the batched decoder

 private:
  struct Slot {
    std::unique_ptr<llm::Lfm2Model> owned;  // slot 0 uses the session's model
    llm::Lfm2Model* model = nullptr;
    gpu::Buffer params;
    kernels::Sampler::Groups groups;        // samples the model's own logits (prefill, lone decode)
    kernels::Sampler::Groups batch_groups;  // samples this slot's row of the batch decoder's logits
    std::unique_ptr<RowControls> controls;  // logit edits and logprobs around the sample
    std::shared_ptr<Job> job;
    uint32_t steps = 0;      // ids of the current job read back and accepted
    uint32_t submitted = 0;  // ids of the current job sampled on the GPU (steps, plus the step in flight)
  };
  // A submitted step whose ids are not read yet: each row's slot and the job it sampled for (a
  // slot that ended or got a new job meanwhile ignores its id).
  struct InFlight {
    uint32_t readback = 0;
    std::vector<std::pair<Slot*, std::shared_ptr<Job>>> rows;
    uint64_t batched_rows = 0;
  };

  void run();
  void admit(std::vector<Slot*>& joined);
  // Submits the next step of every slot that may go on, then reads back the previous step's ids
  // (so the GPU works on one step while the CPU handles the last): a stop costs at most the
  // one token in flight, which is discarded.
  void step();
  bool may_sample_more(const JobRequest& r, uint32_t sampled) const;
  // Waits for the step in flight and hands its ids to the jobs (or drops them with `discard`).
  void finish_in_flight(bool discard = false);
  uint64_t logprobs_offset(uint64_t row) const { return uint64_t(slots_.size()) * 4 + row * kernels::Logprobs::kOutBytes; }
  bool is_end(uint32_t id) const;  // an end-of-generation id (never grammar output)
  // Frees the slot, then completes its job (or fails it with *error) and reports it to on_done.
  void end(Slot& slot, const std::string* error = nullptr);

  llm::Session& session_;
  SchedulerOptions options_;
  uint32_t capacity_ = 0, sample_vocab_ = 0;
  std::unique_ptr<kernels::Sampler> sampler_;
  std::unique_ptr<RowControlsContext> controls_;
  std::vector<Slot> slots_;
  std::unique_ptr<llm::Lfm2BatchDecoder> batch_;  // row i = slot i; null where the shapes do not allow it
  // Two slots, alternating: one in flight, one being read. A slot holds each slot's id (then each
  // slot's logprobs, Logprobs::kOutBytes, after all the ids); the ring
  // checks the status words of the step's kernels (the sampler's, each decode's) with them.
  std::unique_ptr<gpu::ReadbackRing> readback_;
  uint32_t next_readback_ = 0;
  std::optional<InFlight> in_flight_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;
  uint32_t active_ = 0;
  uint64_t steps_ = 0, batched_rows_ = 0;
  bool accepting_ = true, cancel_all_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace ember::server
