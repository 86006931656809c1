#include "tune/llm_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "common/error.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernels/matmul_q4.h"
#include "kernels/matvec_q4.h"
#include "formats/llm_layout.h"
#include "tune/decode_step.h"
#include "tune/kernel_timer.h"
#include "tune/matvec_search.h"

namespace ember::tune {
namespace {

using WallClock = std::chrono::steady_clock;
constexpr uint32_t kMinSteps = 8;     // fewest decode steps timed at a context
constexpr double kWarmupMs = 500;    // first-token warm-up: runs until this much wall time has passed
double ms_since(WallClock::time_point t0) { return std::chrono::duration<double, std::milli>(WallClock::now() - t0).count(); }

std::vector<uint32_t> random_ids(uint32_t vocab, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> ids(n);
  for (auto& id : ids) id = rng() % vocab;
  return ids;
}

llm::SamplingOptions greedy() {
  llm::SamplingOptions s;
  s.temperature = 0;
  return s;
}

uint64_t q4_bytes(const llm::Lfm2MatrixShape& m) {
  return formats::q4_quant_bytes(m.rows, m.cols) + formats::q4_scale_bytes(m.rows, m.cols) +
         (m.asymmetric ? formats::q4_zero_point_bytes(m.rows, m.cols) : 0);
}

// Bytes per decode step read by each kernel label of the model's planned decode step, where they
// can be computed from the shape: every matrix by the dispatch that multiplies by it, attention
// over the KV cache.
std::map<std::string, uint64_t> bytes_by_label(const llm::Lfm2Model& model, uint32_t context) {
  std::map<std::string, uint64_t> out;
  const auto& s = model.shape();
  const auto shapes = llm::lfm2_matrix_shapes(s);
  for (const auto& d : model.plan(llm::Lfm2Mode::decode).steps) {
    uint64_t bytes = 0;
    for (size_t k = d.first; k < d.first + d.count; k++) {
      const llm::Lfm2Op& op = model.graph().ops[k];
      if (op.shape_key) bytes += q4_bytes(llm::lfm2_matrix_shape(shapes, op.shape_key));
      if (op.role == llm::Lfm2Role::attention) bytes += 2 * uint64_t(context) * uint64_t(s.kv_rows() + s.kv_heads * model.choices().padding) * 4;
    }
    if (bytes) out[model.kernel_label(llm::Lfm2Mode::decode, d)] += bytes;
  }
  return out;
}

// Label prefix `label` names kernel `name`: exactly, or a family name ("mlp_q4") before its
// [defines]{constants}.
bool label_matches(const std::string& name, const std::string& label) {
  return label == name ||
         (name.rfind(label, 0) == 0 && name.size() > label.size() && (name[label.size()] == '[' || name[label.size()] == '{'));
}

// GPU time per kernel label over `steps` decode steps, as (dispatches, us) per step, each dispatch
// in its own timed pass.
std::map<std::string, std::pair<double, double>> profile_decode(llm::Lfm2Model& model, uint32_t steps) {
  gpu::Profiler prof(model.device(), 2048);  // 2 queries each: WebGPU allows 4096
  for (uint32_t i = 0; i < steps; i++) {
    gpu::Recorder rec(model.device(), &prof, gpu::Recorder::Timing::PerDispatch);
    model.record_decode(rec);
    rec.submit();
    prof.collect();  // accumulates the per-label totals
  }
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& e : prof.summary()) out[e.name] = {double(e.count) / steps, 1e3 * e.total_ms / steps};
  return out;
}

// FLOPs of a prefill of T tokens from position 0, by kernel label of the planned prefill: the
// matmuls, causal attention (QK^T and PV over the keys each query sees), the head matvec for the
// last token.
std::map<std::string, double> prefill_flops_by_label(const llm::Lfm2Model& model, uint32_t T) {
  std::map<std::string, double> out;
  const auto& s = model.shape();
  const auto shapes = llm::lfm2_matrix_shapes(s);
  for (const auto& d : model.plan(llm::Lfm2Mode::prefill).steps) {
    double flops = 0;
    for (size_t k = d.first; k < d.first + d.count; k++) {
      const llm::Lfm2Op& op = model.graph().ops[k];
      if (op.shape_key) {  // the head runs on the last token only
        const auto& m = llm::lfm2_matrix_shape(shapes, op.shape_key);
        flops += 2.0 * m.rows * m.cols * (op.role == llm::Lfm2Role::head ? 1 : T);
      }
      if (op.role == llm::Lfm2Role::attention) flops += 2.0 * 2.0 * double(s.heads) * s.head_dim * (double(T) * (T + 1) / 2);
    }
    if (flops > 0) out[model.kernel_label(llm::Lfm2Mode::prefill, d)] += flops;
  }
  return out;
}

uint64_t kv_bytes(const llm::Lfm2Model& model, uint32_t context) {
  const auto& s = model.shape();
  int attn = 0;
  for (auto t : s.layer_types) attn += t == formats::LayerType::Attention;
  return uint64_t(attn) * 2 * context * uint64_t(s.kv_rows() + s.kv_heads * model.choices().padding) * 4;
}

}  // namespace

LlmBenchResult bench_llm(llm::Lfm2Model& model, llm::Generator& generator, const Ceilings& ceilings, const LlmBenchOptions& options) {
  const gpu::Device& device = model.device();
  LlmBenchResult res;
  res.device = device.adapter().to_json();
  res.ceilings = ceilings;
  res.options = options;
  res.down_copy = model.choices().down_copy();
  const int repeats = std::max(1, options.repeats);
  const uint32_t capacity = model.capacity();
  res.prompt = std::min<uint32_t>(std::max<uint32_t>(1, options.prompt), capacity > 2 ? capacity - 2 : 1);
  const auto prompt = random_ids(model.vocab(), res.prompt, 1);

  // ---- time to first token, prefill ----
  auto first_token = [&] {
    generator.reset();
    llm::GenerateOptions go;
    go.max_tokens = 1;
    go.in_flight = 1;
    return generator.generate(prompt, greedy(), go, [](uint32_t) { return true; }).ttft_ms;
  };
  // Warm-up by time, not by count: a GPU fresh from idle runs its first few hundred ms at low
  // clocks. With one warm-up run, the first bench on a freshly started machine could read twice
  // the time to first token of the benches after it.
  const auto warm_start = WallClock::now();
  do {
    first_token();
    res.ttft_warmup_runs++;
  } while (ms_since(warm_start) < kWarmupMs);
  res.ttft_warmup_ms = ms_since(warm_start);
  std::vector<double> ttft, prefill;
  for (int r = 0; r < repeats; r++) {
    ttft.push_back(first_token());
    model.reset();
    auto t0 = WallClock::now();
    model.prefill(prompt);
    device.wait_idle();
    prefill.push_back(ms_since(t0));
  }
  res.ttft_ms = median(ttft);
  res.prefill_ms = median(prefill);
  res.prefill_tok_s = res.prefill_ms > 0 ? res.prompt / (res.prefill_ms / 1e3) : 0;
  res.prefill_chunks = model.prefill_chunks();
  res.prefill_dispatches = model.prefill_dispatches();
  const auto flops = prefill_flops_by_label(model, res.prompt);
  for (const auto& [label, f] : flops) res.prefill_flops += f;
  res.prefill_tflops = res.prefill_ms > 0 ? res.prefill_flops / (res.prefill_ms * 1e9) : 0;
  if (device.exact_timestamps()) {
    try {
      gpu::Profiler prof(device, 2048);  // 2 queries each: WebGPU allows 4096
      model.reset();
      model.prefill(prompt, &prof);
      double sum = 0;
      for (const auto& region : prof.collect()) sum += region.ms();
      res.prefill_gpu_ms = sum;
      res.prefill_gpu_note = "sum of per-dispatch GPU times (each dispatch in its own timed pass)";
      for (const auto& e : prof.summary()) {
        PrefillKernelCost k{e.name, size_t(e.count), 1e3 * e.total_ms, 0};
        for (const auto& [label, f] : flops)
          if (label_matches(e.name, label)) k.flops += f;
        res.prefill_kernels.push_back(k);
      }
    } catch (const Error& e) {
      res.prefill_gpu_note = std::string("not measured: ") + e.what();
      device.wait_idle();
    }
  } else {
    res.prefill_gpu_note = "not measured: no exact timestamps (timestamp-query, opened for profiling)";
  }

  // ---- decode at each context ----
  const double bw = ceilings.read_gbps;  // bytes per ns
  for (uint32_t context : options.contexts) {
    ContextBench cb;
    cb.context = context;
    // The steps run from `context` on: fewer of them where the cache would overflow.
    uint32_t gen = std::max<uint32_t>(2, options.gen);
    if (context >= 1 && uint64_t(context) + gen + 2 > capacity && uint64_t(context) + 2 + kMinSteps <= capacity)
      gen = capacity - context - 2;
    cb.gen = gen;
    if (context < 1 || uint64_t(context) + gen + 2 > capacity) {
      cb.skipped = "context + " + std::to_string(kMinSteps) + " steps + 2 exceeds the model's " + std::to_string(capacity) + " positions";
      res.contexts.push_back(cb);
      continue;
    }
    const auto ids = random_ids(model.vocab(), context, 100 + context);
    const auto next = random_ids(model.vocab(), gen, 200 + context);
    std::vector<double> tok_s, gpu_us, wall_us;
    for (int r = 0; r <= repeats; r++) {
      generator.reset();
      llm::GenerateOptions go;
      go.max_tokens = gen + 1;
      go.in_flight = options.in_flight;
      go.steps_per_submit = options.steps_per_submit;
      auto st = generator.generate(ids, greedy(), go, [](uint32_t) { return true; });
      // The decode graph alone (no sampler): steps back to back, one submit each. First wall
      // clock, pipelined; then GPU timestamps.
      fill_context(model, ids, next);
      auto t0 = WallClock::now();
      for (uint32_t i = 0; i < gen; i++) {
        gpu::Recorder rec(device);
        model.record_decode(rec);
        rec.submit();
      }
      device.wait_idle();
      if (r > 0) wall_us.push_back(ms_since(t0) * 1e3 / gen);
      std::vector<double> steps;
      if (device.exact_timestamps()) steps = decode_step_gpu_us(model, ids, next);
      if (r > 0) {
        tok_s.push_back(st.decode_tok_s);
        if (!steps.empty()) gpu_us.push_back(median(steps));
      }
    }
    cb.decode_tok_s = median(tok_s);
    cb.step_gpu_us = median(gpu_us);
    cb.step_wall_us = median(wall_us);
    cb.dispatches = model.decode_dispatches();
    cb.stages = model.decode_stages();
    res.dispatches = cb.dispatches;
    res.weight_bytes = model.decode_weight_bytes();
    cb.bytes = res.weight_bytes + kv_bytes(model, context + gen / 2);
    cb.achieved_gbps = cb.step_gpu_us > 0 ? cb.bytes / (cb.step_gpu_us * 1e3) : 0;
    cb.bandwidth_floor_us = bw > 0 ? cb.bytes / (bw * 1e3) : 0;
    cb.dispatch_floor_us = cb.dispatches * ceilings.dispatch_gpu_us;
    cb.floor_us = std::max(cb.bandwidth_floor_us, cb.dispatch_floor_us);
    // A decode step is a chain: no stage starts before the one before it ends. Each pays at least
    // the measured cost of a dependent stage, and the bytes at full bandwidth come on top (a short
    // read never reaches it: bench gpu --stage-kib).
    cb.chain_floor_us = cb.stages * ceilings.stage_gpu_us + cb.bandwidth_floor_us;

    if (options.profile && device.exact_timestamps()) {
      const uint32_t n = std::max<uint32_t>(1, std::min<uint32_t>(options.profile_steps, gen));
      fill_context(model, ids, next);
      const auto alone = profile_decode(model, n);
      // What each kernel adds to the chain: the step in one pass, then without that kernel's
      // dispatches (medians of `n` steps; the kernels' costs do not depend on the values).
      const std::span<const uint32_t> profiled(next.data(), n);
      cb.profile_step_us = median(decode_step_gpu_us(model, ids, profiled));
      const auto bytes = bytes_by_label(model, context);
      for (const auto& [name, cost] : alone) {
        KernelCost k;
        k.kernel = name;
        k.dispatches = cost.first;
        k.us = cost.second;
        for (const auto& [label, b] : bytes)
          if (label_matches(name, label)) k.bytes += b;
        const double bytes_us = bw > 0 ? k.bytes / (bw * 1e3) : 0.0;
        k.floor_us = std::max(bytes_us, k.dispatches * ceilings.dispatch_gpu_us);
        k.chain_us = cb.profile_step_us - median(decode_step_gpu_us(model, ids, profiled, name));
        // The one-dispatch residual MLP hands over two stages inside the kernel.
        const double stages = k.dispatches * (label_matches(name, "residual_mlp_q4") ? llm::Lfm2Model::kResidualMlpStages : 1);
        k.chain_floor_us = stages * ceilings.stage_gpu_us + bytes_us;
        cb.kernels.push_back(k);
      }
      std::sort(cb.kernels.begin(), cb.kernels.end(), [](const KernelCost& a, const KernelCost& b) { return a.us > b.us; });
    }
    res.contexts.push_back(cb);
  }
  model.reset();
  generator.reset();
  // The generator's runs checked their status words with their ids; this checks those of the
  // decode steps timed without a read-back (a give-up throws, naming the kernel).
  device.check("bench llm");
  res.residual_mlp_workgroups = model.residual_mlp() ? model.choices().residual_mlp_workgroups : 0;
  return res;
}

nlohmann::json LlmBenchResult::to_json() const {
  nlohmann::json ctx = nlohmann::json::array();
  for (const auto& c : contexts) {
    nlohmann::json j = {{"context", c.context}, {"gen", c.gen}};
    if (!c.skipped.empty()) {
      j["skipped"] = c.skipped;
      ctx.push_back(j);
      continue;
    }
    j.update({{"decode_tok_s", c.decode_tok_s},
              {"dispatches_per_token", c.dispatches},
              {"stages_per_token", c.stages},
              {"step_gpu_us", c.step_gpu_us},
              {"gpu_tok_s", c.step_gpu_us > 0 ? 1e6 / c.step_gpu_us : 0.0},
              {"step_wall_us", c.step_wall_us},
              {"bytes_per_token", c.bytes},
              {"achieved_gbps", c.achieved_gbps},
              {"floor_us", c.floor_us},
              {"floor_tok_s", c.floor_us > 0 ? 1e6 / c.floor_us : 0.0},
              {"bandwidth_floor_us", c.bandwidth_floor_us},
              {"dispatch_floor_us", c.dispatch_floor_us},
              {"gpu_vs_floor", c.floor_us > 0 ? c.step_gpu_us / c.floor_us : 0.0},
              {"chain_floor_us", c.chain_floor_us},
              {"chain_floor_tok_s", c.chain_floor_us > 0 ? 1e6 / c.chain_floor_us : 0.0},
              {"gpu_vs_chain_floor", c.chain_floor_us > 0 ? c.step_gpu_us / c.chain_floor_us : 0.0}});
    if (!c.kernels.empty()) {
      nlohmann::json ks = nlohmann::json::array();
      for (const auto& k : c.kernels) {
        ks.push_back({{"kernel", k.kernel}, {"dispatches", k.dispatches}, {"us", k.us}, {"bytes", k.bytes}, {"floor_us", k.floor_us},
                      {"chain_us", k.chain_us}, {"chain_floor_us", k.chain_floor_us}});
      }
      j["profile"] = ks;
      j["profile_step_us"] = c.profile_step_us;
    }
    ctx.push_back(j);
  }
  nlohmann::json pk = nlohmann::json::array();
  for (const auto& k : prefill_kernels)
    pk.push_back({{"kernel", k.kernel}, {"dispatches", k.dispatches}, {"us", k.us}, {"tflop", k.flops / 1e12},
                  {"tflops", k.us > 0 ? k.flops / (k.us * 1e6) : 0.0}});
  return {{"device", device},
          {"ceilings", ceilings.to_json()},
          {"statistic", "median"},
          {"repeats", options.repeats},
          {"warmup", 1},  // decode: one run per context; time to first token: ttft_warmup_runs
          {"ttft_warmup_runs", ttft_warmup_runs},
          {"ttft_warmup_ms", ttft_warmup_ms},
          {"candidate", candidate_key},
          {"down_copy", down_copy},
          {"prompt_tokens", prompt},
          {"gen_tokens", options.gen},
          {"in_flight", options.in_flight}, {"steps_per_submit", options.steps_per_submit},
          {"ttft_ms", ttft_ms},
          {"prefill_ms", prefill_ms},
          {"prefill_tok_s", prefill_tok_s},
          {"prefill_gpu_ms", prefill_gpu_ms >= 0 ? nlohmann::json(prefill_gpu_ms) : nlohmann::json()},
          {"prefill_gpu_note", prefill_gpu_note},
          {"prefill_chunks", prefill_chunks},
          {"prefill_dispatches", prefill_dispatches},
          {"prefill_tflop", prefill_flops / 1e12},
          {"prefill_tflops", prefill_tflops},
          {"prefill_gpu_tflops", prefill_gpu_ms > 0 ? prefill_flops / (prefill_gpu_ms * 1e9) : 0.0},
          {"prefill_profile", pk},
          {"dispatches_per_token", dispatches},
          {"residual_mlp_workgroups", residual_mlp_workgroups},
          {"weight_bytes_per_token", weight_bytes},
          {"contexts", ctx}};
}

std::string LlmBenchResult::table() const {
  std::string out;
  char line[320];
  const std::string name = device.value("device", std::string());
  std::snprintf(line, sizeof line, "device: %s   candidate %s (down.%s)   read %.1f GB/s, dispatch %.2f us, dependent stage %.2f us (GPU)\n",
                name.c_str(), candidate_key.c_str(), down_copy.c_str(), ceilings.read_gbps, ceilings.dispatch_gpu_us, ceilings.stage_gpu_us);
  out += line;
  std::snprintf(line, sizeof line, "prompt %u tokens: time to first token %.2f ms, prefill %.2f ms = %.0f tok/s", prompt, ttft_ms, prefill_ms,
                prefill_tok_s);
  out += line;
  if (prefill_gpu_ms >= 0) {
    std::snprintf(line, sizeof line, " (GPU %.2f ms)", prefill_gpu_ms);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "prefill: %zu chunks, %zu dispatches, %.3f TFLOP = %.1f TFLOP/s (wall)", prefill_chunks, prefill_dispatches,
                prefill_flops / 1e12, prefill_tflops);
  out += line;
  if (prefill_gpu_ms > 0) {
    std::snprintf(line, sizeof line, ", %.1f TFLOP/s (GPU sum)", prefill_flops / (prefill_gpu_ms * 1e9));
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "per token: %.2f MB of weights%s\n", weight_bytes / 1e6,
                residual_mlp_workgroups ? (", out projection + MLP in one dispatch of " + std::to_string(residual_mlp_workgroups) + " workgroups").c_str() : "");
  out += line;
  std::snprintf(line, sizeof line, "%8s %6s %10s %10s %10s %10s %9s %6s %9s %10s %7s %6s %9s %8s\n", "context", "steps", "tok/s", "GPU tok/s",
                "step us", "wall us", "GB/s", "disp", "floor us", "floor t/s", "x floor", "stages", "chain us", "x chain");
  out += line;
  for (const auto& c : contexts) {
    if (!c.skipped.empty()) {
      std::snprintf(line, sizeof line, "%8u skipped: %s\n", c.context, c.skipped.c_str());
      out += line;
      continue;
    }
    std::snprintf(line, sizeof line, "%8u %6u %10.1f %10.1f %10.2f %10.2f %9.1f %6zu %9.2f %10.0f %6.2fx %6zu %9.2f %7.2fx\n", c.context, c.gen,
                  c.decode_tok_s, c.step_gpu_us > 0 ? 1e6 / c.step_gpu_us : 0.0, c.step_gpu_us, c.step_wall_us, c.achieved_gbps, c.dispatches, c.floor_us,
                  c.floor_us > 0 ? 1e6 / c.floor_us : 0.0, c.floor_us > 0 ? c.step_gpu_us / c.floor_us : 0.0, c.stages, c.chain_floor_us,
                  c.chain_floor_us > 0 ? c.step_gpu_us / c.chain_floor_us : 0.0);
    out += line;
  }
  if (!prefill_kernels.empty()) {
    std::snprintf(line, sizeof line, "\nper-kernel GPU time of one %u-token prefill (each dispatch timed alone):\n", prompt);
    out += line;
    std::snprintf(line, sizeof line, "%-72s %6s %9s %9s %9s\n", "kernel", "n", "us", "GFLOP", "TFLOP/s");
    out += line;
    double total = 0;
    for (const auto& k : prefill_kernels) {
      total += k.us;
      std::snprintf(line, sizeof line, "%-72s %6zu %9.1f %9.2f %9.2f\n", k.kernel.substr(0, 72).c_str(), k.dispatches, k.us, k.flops / 1e9,
                    k.us > 0 ? k.flops / (k.us * 1e6) : 0.0);
      out += line;
    }
    std::snprintf(line, sizeof line, "%-72s %6s %9.1f\n", "total", "", total);
    out += line;
  }
  for (const auto& c : contexts) {
    if (c.kernels.empty()) continue;
    std::snprintf(line, sizeof line,
                  "\nper-kernel GPU time of one decode step at context %u (us: each dispatch timed alone; chain us: the step in one pass, "
                  "%.2f us, less the step without the kernel):\n", c.context, c.profile_step_us);
    out += line;
    std::snprintf(line, sizeof line, "%-72s %6s %9s %9s %9s %7s %9s %9s %7s\n", "kernel", "n", "us", "MB", "floor us", "x floor", "chain us",
                  "ch floor", "x chain");
    out += line;
    double total = 0, chain = 0, chain_floor = 0;
    for (const auto& k : c.kernels) {
      total += k.us;
      chain += k.chain_us;
      chain_floor += k.chain_floor_us;
      std::snprintf(line, sizeof line, "%-72s %6.1f %9.2f %9.3f %9.2f %6.2fx %9.2f %9.2f %6.2fx\n", k.kernel.substr(0, 72).c_str(), k.dispatches, k.us,
                    k.bytes / 1e6, k.floor_us, k.floor_us > 0 ? k.us / k.floor_us : 0.0, k.chain_us, k.chain_floor_us,
                    k.chain_floor_us > 0 ? k.chain_us / k.chain_floor_us : 0.0);
      out += line;
    }
    std::snprintf(line, sizeof line, "%-72s %6s %9.2f %37s %9.2f %9.2f %6.2fx\n", "total", "", total, "", chain, chain_floor,
                  chain_floor > 0 ? chain / chain_floor : 0.0);
    out += line;
  }
  return out;
}

}  // namespace ember::tune
