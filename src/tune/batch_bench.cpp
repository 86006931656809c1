#include "tune/batch_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include "common/error.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernels/sampler.h"
#include "llm/lfm2_batch.h"
#include "llm/sampling.h"
#include "tune/kernel_timer.h"

namespace ember::tune {
namespace {

using WallClock = std::chrono::steady_clock;
double us_since(WallClock::time_point t0) { return std::chrono::duration<double, std::micro>(WallClock::now() - t0).count(); }

// The sequences of one measurement: row r is sequences[r], each with its sampler parameters.
struct Rows {
  std::vector<llm::Lfm2Model*> models;
  std::vector<gpu::Buffer> params;
  std::vector<kernels::Sampler::Groups> groups;  // bound to the batch decoder's logits row (or the model's own)
  std::unique_ptr<llm::Lfm2BatchDecoder> batch;  // null for one row: the model's own decode, as serve runs it
};

}  // namespace

BatchBenchResult bench_batch(llm::Lfm2Model& model, uint32_t sample_vocab, const BatchBenchOptions& options) {
  const gpu::Device& device = model.device();
  BatchBenchResult res;
  res.device = device.adapter().to_json();
  res.options = options;
  if (options.rows.empty()) throw Error("no row counts given", "bench batch", "give --rows, e.g. --rows 1,4,16");
  const uint32_t most = *std::max_element(options.rows.begin(), options.rows.end());
  if (*std::min_element(options.rows.begin(), options.rows.end()) < 1) throw Error("a row count below 1", "--rows", "give counts >= 1");
  if (uint64_t(options.context) + options.steps + 2 > model.capacity() || options.context < 1)
    throw Error("context " + std::to_string(options.context) + " + " + std::to_string(options.steps) + " steps does not fit the model's " +
                    std::to_string(model.capacity()) + " positions",
                "bench batch", "lower --context or --steps");
  if (most > 1) {
    const std::string why = llm::Lfm2BatchDecoder::unsupported(model);
    if (!why.empty()) throw Error(why, "bench batch", "this model decodes one sequence at a time here");
  }
  const uint32_t vocab = std::min(sample_vocab ? sample_vocab : model.vocab(), model.vocab());
  kernels::Sampler sampler(model.kernels(), llm::sampler_config(vocab, model.sample_partials()));
  std::vector<std::unique_ptr<llm::Lfm2Model>> copies;
  if (most > model.caches().slots() || model.cache_slot() != 0)
    throw Error("the model's caches have " + std::to_string(model.caches().slots()) + " slots for " + std::to_string(most) + " rows",
                "bench batch", "open the model with SessionOptions::sequences >= the most rows");
  for (uint32_t r = 1; r < most; r++)
    copies.push_back(std::make_unique<llm::Lfm2Model>(model, llm::ModelOptions{.quiet = true, .caches = model.shared_caches(), .cache_slot = r}));

  llm::SamplingOptions sampling;
  sampling.temperature = options.sample ? 1.0f : 0.0f;
  sampling.seed = 7;
  std::mt19937 rng(3);
  const int repeats = std::max(1, options.repeats);
  for (uint32_t n : options.rows) {
    Rows rows;
    for (uint32_t r = 0; r < n; r++) rows.models.push_back(r == 0 ? &model : copies[r - 1].get());
    if (n > 1) rows.batch = std::make_unique<llm::Lfm2BatchDecoder>(rows.models);
    for (uint32_t r = 0; r < n; r++) {
      rows.params.push_back(device.create_storage(sizeof(kernels::SamplerParams), "bench.sampler.params"));
      rows.groups.push_back(sampler.bind(rows.batch ? rows.batch->logits_row(r) : gpu::Binding{&model.logits()},
                                         {&rows.models[r]->tokens()}, {&rows.params.back()}));
    }
    std::vector<uint32_t> all(n);
    for (uint32_t r = 0; r < n; r++) all[r] = r;
    size_t dispatches = 0;
    // One step as the scheduler records it: the decode of every row, then each row's sampler.
    auto record_step = [&](gpu::Recorder& rec, uint32_t step) {
      if (rows.batch) rows.batch->record(rec, all);
      else model.record_decode(rec);
      for (uint32_t r = 0; r < n; r++) {
        const uint32_t pos = rows.models[r]->position();
        kernels::upload_params(device, rows.params[r], sampling.gpu_params(vocab, pos, step));
        if (sampling.greedy()) sampler.record_greedy(rec, rows.groups[r]);
        else sampler.record_sample(rec, rows.groups[r]);
      }
    };
    auto refill = [&] {
      for (auto* m : rows.models) {
        std::vector<uint32_t> ids(options.context);
        for (auto& id : ids) id = rng() % vocab;
        m->reset();
        m->prefill(ids);
      }
      device.wait_idle();
    };

    BatchRowsBench b;
    b.rows = n;
    std::vector<double> wall, cpu, gpu_us;
    for (int rep = 0; rep <= repeats; rep++) {
      refill();
      double record_us = 0;
      const auto t0 = WallClock::now();
      for (uint32_t s = 0; s < options.steps; s++) {
        const auto r0 = WallClock::now();
        gpu::Recorder rec(device);
        record_step(rec, s);
        dispatches = rec.dispatches();
        rec.submit();
        record_us += us_since(r0);
      }
      device.wait_idle();
      const double total = us_since(t0);
      if (device.exact_timestamps()) {
        refill();
        gpu::Profiler prof(device, 2048);
        std::vector<double> steps;
        for (uint32_t s = 0; s < options.steps; s++) {
          gpu::Recorder rec(device, &prof, gpu::Recorder::Timing::WholeSubmit, "step");
          record_step(rec, s);
          rec.submit();
          if (s % 32 == 31 || s + 1 == options.steps)
            for (const auto& region : prof.collect()) steps.push_back((region.end_ns - region.begin_ns) / 1e3);
        }
        if (rep > 0) gpu_us.push_back(median(steps));
      }
      if (rep > 0) {
        wall.push_back(total / options.steps);
        cpu.push_back(record_us / options.steps);
      }
    }
    b.dispatches = dispatches;
    b.step_wall_us = median(wall);
    b.record_cpu_us = median(cpu);
    b.step_gpu_us = median(gpu_us);
    b.tok_s = b.step_wall_us > 0 ? n * 1e6 / b.step_wall_us : 0;
    if (options.profile && device.exact_timestamps()) {
      refill();
      constexpr uint32_t kProfiled = 4;
      gpu::Profiler prof(device, 2048);  // 2 queries each: WebGPU allows 4096
      for (uint32_t s = 0; s < kProfiled; s++) {
        gpu::Recorder rec(device, &prof, gpu::Recorder::Timing::PerDispatch);
        record_step(rec, s);
        rec.submit();
        prof.collect();
      }
      for (const auto& e : prof.summary()) b.kernels.push_back({e.name, double(e.count) / kProfiled, 1e3 * e.total_ms / kProfiled, 0, 0});
    }
    res.rows.push_back(b);
  }
  model.reset();
  device.check("bench batch");  // also the status words of the steps' kernels (the sampler's, each decode's)
  return res;
}

nlohmann::json BatchBenchResult::to_json() const {
  nlohmann::json rs = nlohmann::json::array();
  for (const auto& b : rows) {
    nlohmann::json j = {{"rows", b.rows},
                        {"dispatches_per_step", b.dispatches},
                        {"step_wall_us", b.step_wall_us},
                        {"record_cpu_us", b.record_cpu_us},
                        {"step_gpu_us", b.step_gpu_us},
                        {"aggregate_tok_s", b.tok_s},
                        {"gpu_tok_s", b.step_gpu_us > 0 ? b.rows * 1e6 / b.step_gpu_us : 0.0}};
    if (!b.kernels.empty()) {
      nlohmann::json ks = nlohmann::json::array();
      for (const auto& k : b.kernels) ks.push_back({{"kernel", k.kernel}, {"dispatches", k.dispatches}, {"us", k.us}});
      j["profile"] = ks;
    }
    rs.push_back(j);
  }
  return {{"device", device},   {"statistic", "median"},           {"repeats", options.repeats},
          {"warmup", 1},        {"context", options.context},      {"steps", options.steps},
          {"sampling", options.sample ? "temperature 1" : "greedy"}, {"rows", rs}};
}

std::string BatchBenchResult::table() const {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "device: %s   context %u, %u steps, %s sampling\n", device.value("device", std::string()).c_str(),
                options.context, options.steps, options.sample ? "temperature-1" : "greedy");
  out += line;
  std::snprintf(line, sizeof line, "%6s %11s %10s %10s %10s %12s %10s\n", "rows", "dispatches", "wall us", "GPU us", "CPU us", "tok/s", "GPU tok/s");
  out += line;
  for (const auto& b : rows) {
    std::snprintf(line, sizeof line, "%6u %11zu %10.1f %10.1f %10.1f %12.1f %10.1f\n", b.rows, b.dispatches, b.step_wall_us, b.step_gpu_us,
                  b.record_cpu_us, b.tok_s, b.step_gpu_us > 0 ? b.rows * 1e6 / b.step_gpu_us : 0.0);
    out += line;
  }
  for (const auto& b : rows) {
    if (b.kernels.empty()) continue;
    std::snprintf(line, sizeof line, "\nper-kernel GPU time of one step with %u rows (each dispatch timed alone):\n", b.rows);
    out += line;
    std::snprintf(line, sizeof line, "%-72s %6s %9s\n", "kernel", "n", "us");
    out += line;
    double total = 0;
    for (const auto& k : b.kernels) {
      total += k.us;
      std::snprintf(line, sizeof line, "%-72s %6.1f %9.2f\n", k.kernel.substr(0, 72).c_str(), k.dispatches, k.us);
      out += line;
    }
    std::snprintf(line, sizeof line, "%-72s %6s %9.2f\n", "total", "", total);
    out += line;
  }
  return out;
}

}  // namespace ember::tune
