#include "tune/tuner.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "llm/lfm2_weights.h"
#include "tune/tune_phases.h"

namespace ember::tune {
namespace fs = std::filesystem;

// `input` with the choices `res` made: the candidate, the knee, the flash optima, the dequant
// variant, the subgroup size they were made at.
formats::RuntimeFile tuned_file(const formats::RuntimeFile& input, const TuneResult& res, int64_t capacity) {
  formats::RuntimeFile file = input;
  formats::Runtime& rt = file.runtime;
  formats::Candidate& c = file.candidate;
  file.has_candidate = true;
  c.key = "ember-tune";
  c.extra["adapter"] = res.adapter;
  std::map<std::string, int> wins;
  for (const auto& r : res.matvec) {
    formats::MatvecChoice mc;
    mc.geometry = to_format(r.chosen().config.geometry);
    mc.variant = kernels::q4_variant_name(r.chosen().config.variant);
    wins[mc.variant] += 1;
    auto it = std::find_if(c.matvec.begin(), c.matvec.end(), [&](const auto& e) { return e.first == r.shape.key; });
    if (it != c.matvec.end()) it->second = mc;
    else c.matvec.emplace_back(r.shape.key, mc);
    auto kt = std::find_if(rt.knee.begin(), rt.knee.end(), [&](const auto& k) { return k.shape == r.shape.key; });
    if (kt != rt.knee.end()) kt->geometry = to_format(r.knee);
    else rt.knee.push_back({r.shape.key, to_format(r.knee), formats::OrderedJson::object()});
  }
  if (!wins.empty())
    rt.dequant_variant = std::max_element(wins.begin(), wins.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  if (res.flash_direct.workgroup) c.extra["flashDirectWorkgroup"] = res.flash_direct.workgroup;
  if (!res.flash.empty()) {
    rt.flash_optima.clear();
    for (const auto& p : res.flash) rt.flash_optima.push_back({p.positions, p.best_blocks, formats::OrderedJson::object()});
    c.flash = true;
    c.flash_blocks = res.flash.front().best_blocks;
    for (const auto& p : res.flash)
      if (int64_t(p.positions) == std::min<int64_t>(rt.plan_position, capacity)) c.flash_blocks = p.best_blocks;
  }
  c.mlp_pair = res.mlp_pair;
  const bool fused = res.mlp && res.mlp_pair;
  if (fused) {
    c.mlp_slices = res.mlp->best.slices;
    c.mlp_workgroup = res.mlp->best.workgroup;
  }
  c.mlp_half_dot = "none";  // what runs: ember keeps the gate/up dot products in f32 (mlp_q4.wgsl)
  c.mlp_half_product = fused && res.mlp->best.half_product ? "down" : "none";
  if (!res.prefill.empty()) {
    formats::OrderedJson pm = formats::OrderedJson::object();
    for (const auto& r : res.prefill)
      pm[r.shape.key] = {{"wgTokens", r.best.wg_tokens}, {"wgRows", r.best.wg_rows}, {"kStep", r.best.k_step}, {"micro", r.best.micro},
                         {"vec4", r.best.vec4}, {"kSplits", r.best.k_splits}};
    c.extra["prefillMatmul"] = pm;
  }
  if (res.norm && !res.norm->budget_hit) c.extra["normFuse"] = res.norm->norm_fuse;
  c.extra.erase("residualMlpWorkgroups");
  if (res.residual_mlp && !res.residual_mlp->tried.empty() && !res.mlp_pair)  // it replaces the unfused MLP only
    c.extra["residualMlpWorkgroups"] = res.residual_mlp->workgroups;  // 0: measured slower, stays off
  rt.expected_subgroup_size = res.subgroup_size;
  return file;
}

TuneResult tune_llm(const formats::LlmPack& pack, const gpu::Device& device, gpu::KernelCache& kernels, const TuneOptions& options) {
  const auto t0 = Clock::now();
  const double budget = std::max(0.0, options.budget_s);
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  if (!device.has_timestamps())
    throw Error("ember tune needs the timestamp-query feature", device.adapter().name(), "use an adapter with timestamp queries");
  TuneResult res;
  res.file = pack.file();
  res.adapter = device.adapter().name();
  res.subgroup_size = device.subgroup_size();
  res.budget_s = budget;
  const auto& shape = pack.shape();
  const auto& input = pack.candidate();

  say("uploading the weights of " + pack.dir().string());
  auto weights = std::make_shared<const llm::Lfm2Weights>(device, pack);
  const uint64_t flush = options.flush_bytes >= 0 ? uint64_t(options.flush_bytes) : KernelTimer::default_flush_bytes(device);
  KernelTimer timer(device, kernels, flush, options.repeats);

  TuneContext ctx{pack, device, kernels, weights, timer, options, res, t0, budget};
  ctx.pair_fixed_on = input.mlp_pair && !input.unfused && !options.allow_mlp_pair;
  ctx.search_mlp_phase = (input.mlp_pair && !input.unfused) || options.allow_mlp_pair;
  ctx.pair_by_step = options.allow_mlp_pair && !input.unfused;
  ctx.has_attention = std::any_of(shape.layer_types.begin(), shape.layer_types.end(),
                                  [](formats::LayerType t) { return t == formats::LayerType::Attention; });
  ctx.capacity = pack.runtime().max_total_positions > 0 ? pack.runtime().max_total_positions : pack.runtime().max_positions;
  const bool pair_by_step = ctx.pair_by_step, search_mlp_phase = ctx.search_mlp_phase;
  // The phases in order, each until its fraction of the budget: a decided mlpPair (and more so one
  // without the fused MLP to search) leaves the earlier phases more of it.
  const struct {
    TunePhase run;
    double end;
  } phases[] = {
      {tune_matvec_phase, budget * (pair_by_step ? 0.45 : search_mlp_phase ? 0.50 : 0.58)},
      {tune_norm_phase, budget * (pair_by_step ? 0.55 : search_mlp_phase ? 0.61 : 0.69)},
      {tune_flash_phase, budget * (pair_by_step ? 0.65 : search_mlp_phase ? 0.73 : 0.82)},
      {tune_mlp_phase, budget * (pair_by_step ? 0.75 : 0.82)},
      {tune_residual_mlp_phase, budget * (pair_by_step ? 0.80 : 0.86)},
      // Starts the whole-step checks by then (with a pair: always); its later rounds end by
      // kStepsLastFraction of the budget (tune_step_phase.cpp).
      {tune_step_phase, budget * (pair_by_step ? 0.86 : 0.90)},
      {tune_prefill_phase, budget * 0.97},
  };
  for (const auto& phase : phases) phase.run(ctx, phase.end);
  if (search_mlp_phase && !device.has_f16())
    res.unavailable.push_back("mlpHalfProduct (the fused MLP's down products in f16): this adapter has no shader-f16");

  res.file = tuned_file(pack.file(), res, ctx.capacity);
  res.seconds = seconds_since(t0);
  res.warm_flush_us = timer.warm_flush_us();
  res.cold_retries = timer.cold_retries();
  res.cold_kept = timer.cold_kept();
  device.check("ember tune");
  return res;
}

nlohmann::json TuneResult::to_json() const {
  nlohmann::json mv = nlohmann::json::array();
  for (const auto& r : matvec) mv.push_back(r.to_json());
  nlohmann::json fl = nlohmann::json::array();
  for (const auto& p : flash) fl.push_back(p.to_json());
  nlohmann::json j = {{"adapter", adapter}, {"subgroup_size", subgroup_size}, {"seconds", seconds}, {"budget_s", budget_s},
                      {"budget_hit", budget_hit}, {"matvec", mv}, {"flash", fl}, {"flash_direct", flash_direct.to_json()},
                      {"residual_mlp", residual_mlp ? residual_mlp->to_json() : nlohmann::json()}, {"mlp_pair", mlp_pair}, {"mlp_note", mlp_note},
                      {"unavailable", unavailable}, {"candidate", formats::to_json(file.candidate)}};
  j["mlp"] = mlp ? mlp->to_json() : nlohmann::json();
  nlohmann::json pf = nlohmann::json::array();
  for (const auto& r : prefill) pf.push_back(r.to_json());
  j["prefill"] = pf;
  if (step_check) {
    nlohmann::json t = nlohmann::json::array();
    for (const auto& [name, us] : step_check->tried) t.push_back({{"graph", name}, {"step_us", us}});
    j["step_check"] = {{"context", step_check->context}, {"tried", t}, {"chosen", step_check->chosen}};
  }
  if (mlp_pair_check)
    j["mlp_pair_check"] = {{"context", mlp_pair_check->context}, {"fused_step_us", mlp_pair_check->fused_step_us},
                           {"unfused_step_us", mlp_pair_check->unfused_step_us}};
  j["timer"] = {{"warm_flush_us", warm_flush_us}, {"cold_retries", cold_retries}, {"cold_kept", cold_kept}};
  if (norm) j["norm_fusion"] = norm->to_json();
  return j;
}

std::string TuneResult::table() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "ember tune on %s (subgroup %u): %.1f s of %.0f s%s\n", adapter.c_str(), subgroup_size, seconds, budget_s,
                budget_hit ? " (budget reached: best so far)" : "");
  out += line;
  if (warm_flush_us > 0) {
    std::snprintf(line, sizeof line, "clock probe: warm flush %.1f us; %d measurements repeated on a slowed GPU, %d kept slow\n", warm_flush_us,
                  cold_retries, cold_kept);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-14s %11s %6s %10s %10s %10s %7s %8s  %s\n", "shape", "rows x cols", "tried", "default us", "input us",
                "best us", "speedup", "GB/s", "best");
  out += line;
  for (const auto& r : matvec) {
    std::snprintf(line, sizeof line, "%-14s %5ux%-5u %6d %10.2f %10s %10.2f %6.2fx %8.1f  %s\n", r.shape.key.c_str(), r.shape.rows, r.shape.cols,
                  r.tried, r.reference.us, r.input && r.input->us > 0 ? fixed2(r.input->us).c_str() : "-", r.best.us, r.best.us > 0 ? r.reference.us / r.best.us : 0.0,
                  r.best.us > 0 ? r.shape.bytes() / (r.best.us * 1e3) : 0.0,
                  (r.best.config.describe() + (r.step_choice ? "; by decode steps: " + r.step_choice->config.describe() : "")).c_str());
    out += line;
  }
  for (const auto& p : flash) {
    std::snprintf(line, sizeof line, "%-14s %11u %6zu %10.2f %10s %10.2f %6.2fx %8s  %u blocks\n", "flash", p.positions, p.tried.size(),
                  p.one_block_us, "", p.best_us, p.best_us > 0 ? p.one_block_us / p.best_us : 0.0, "", p.best_blocks);
    out += line;
  }
  if (mlp) {
    std::snprintf(line, sizeof line, "%-14s %11s %6d %10.2f %10s %10.2f %6.2fx %8s  slices %u, workgroup %u%s\n", "mlp (fused)", "", mlp->tried,
                  mlp->reference_us, mlp->input_us > 0 ? fixed2(mlp->input_us).c_str() : "-", mlp->best_us, mlp->best_us > 0 ? mlp->reference_us / mlp->best_us : 0.0, "", mlp->best.slices,
                  mlp->best.workgroup, mlp->best.half_product ? ", f16 down products" : "");
    out += line;
  }
  if (step_check) {
    for (const auto& [name, us] : step_check->tried) {
      std::snprintf(line, sizeof line, "decode step at %u positions, %s: %.2f us%s\n", step_check->context, name.c_str(), us,
                    std::count(step_check->chosen.begin(), step_check->chosen.end(), name) ? " (chosen)" : "");
      out += line;
    }
  }
  for (const auto& r : prefill) {
    std::snprintf(line, sizeof line, "%-14s %5ux%-5u %6d %10.2f %10s %10.2f %6.2fx %8s  %s%s, %.1f TFLOP/s at T=%u\n",
                  ("pf " + r.shape.key).c_str(), r.shape.rows, r.shape.cols, r.tried, r.reference_us, "-", r.best_us,
                  r.best_us > 0 ? r.reference_us / r.best_us : 0.0, "", kernels::matmul_geometry_name(r.best).c_str(),
                  r.kmajor ? " k-major" : "", r.best_tflops(), r.tokens);
    out += line;
  }
  if (norm) {
    for (const auto& s : norm->shapes) {
      std::snprintf(line, sizeof line, "%-14s %11s %6d %10.2f %10s %10.2f %6.2fx %8s  norm fused%s\n", ("norm+" + s.key).c_str(), "", 2,
                    s.separate_us, "", s.fused_us, s.fused_us > 0 ? s.separate_us / s.fused_us : 0.0, "", s.rejected ? " (rejected)" : "");
      out += line;
    }
    out += "normFuse " + std::string(norm->budget_hit ? "unchanged (budget reached)" : norm->norm_fuse ? "on" : "off") + "\n";
  }
  out += "mlpPair " + std::string(mlp_pair ? "on" : "off") + ": " + mlp_note + "\n";
  for (const auto& u : unavailable) out += "unavailable: " + u + "\n";
  return out;
}

void write_runtime_json(const formats::RuntimeFile& file, const fs::path& out, bool backup) {
  const std::string text = formats::to_json(file).dump(2) + "\n";
  formats::parse_runtime_json(text, out.string());  // what we write must read back (throws otherwise)
  if (backup && fs::exists(out)) write_file_atomic(fs::path(out.string() + ".bak"), read_file(out));
  write_file_atomic(out, text);
}

}  // namespace ember::tune
