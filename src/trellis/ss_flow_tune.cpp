#include "trellis/ss_flow_tune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <tuple>

#include "common/error.h"
#include "gpu/recorder.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow_candidate.h"
#include "tune/check.h"

namespace ember::trellis {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

bool uses_int8(const SsFlowOptions& o) {
  if (o.int8) return true;
  for (const auto& [r, g] : o.matmul_overrides)
    if (g.int8) return true;
  return false;
}

// One change of the search: a label and how it alters the best options so far.
struct Change {
  std::string label;
  std::function<void(SsFlowOptions&)> apply;
};

// The search space, one field at a time, in the order the fields are searched (the matmul path
// first: it decides what the matmul geometries are timed with).
std::vector<std::vector<Change>> search_space(bool dot4) {
  using kernels::FlashVariant;
  using kernels::QMatmulGeometry;
  std::vector<std::vector<Change>> dims;
  auto count = [](const std::string& name, uint32_t SsFlowOptions::*field, std::vector<uint32_t> values) {
    std::vector<Change> d;
    for (uint32_t v : values) d.push_back({name + "=" + std::to_string(v), [field, v](SsFlowOptions& o) { o.*field = v; }});
    return d;
  };
  auto flag = [](const std::string& name, bool SsFlowOptions::*field) {
    std::vector<Change> d;
    for (bool v : {false, true}) d.push_back({name + "=" + (v ? "true" : "false"), [field, v](SsFlowOptions& o) { o.*field = v; }});
    return d;
  };
  if (dot4) {
    // int8 also with 8 rows a thread everywhere: the int8 kernel keeps an i32 and an f32
    // accumulator per output, so 16 rows a thread may not fit the registers the f32 path does.
    auto d = flag("int8", &SsFlowOptions::int8);
    d.push_back({"int8=true,rows=8", [](SsFlowOptions& o) {
                   o.int8 = true;
                   o.matmul.rows_per_thread = o.mlp0_rows_per_thread = o.mlp2_rows_per_thread = 8;
                 }});
    dims.push_back(d);
  }
  std::vector<Change> matmul, narrow;
  for (auto [t, r, rows] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{{16, 16, 8}, {16, 8, 8}, {8, 16, 8}, {8, 8, 8}, {16, 8, 16}, {8, 8, 16}}) {
    const std::string dims_text = std::to_string(t) + "x" + std::to_string(r) + "x" + std::to_string(rows);
    matmul.push_back({"matmul=" + dims_text, [=](SsFlowOptions& o) {
                        o.matmul.wg_tokens = t;
                        o.matmul.wg_rows = r;
                        o.matmul.rows_per_thread = rows;
                      }});
    narrow.push_back({"narrow_matmul=" + dims_text, [=](SsFlowOptions& o) {
                        QMatmulGeometry g = o.matmul;
                        g.wg_tokens = t;
                        g.wg_rows = r;
                        g.rows_per_thread = rows;
                        o.narrow_matmul = g;
                      }});
  }
  narrow.push_back({"narrow_matmul=none", [](SsFlowOptions& o) { o.narrow_matmul.reset(); }});
  dims.push_back(matmul);
  dims.push_back(narrow);
  dims.push_back(count("mlp2_k_splits", &SsFlowOptions::mlp2_k_splits, {1, 2, 3, 4}));
  dims.push_back(count("square_k_splits", &SsFlowOptions::square_k_splits, {1, 2}));
  dims.push_back(count("mlp0_rows_per_thread", &SsFlowOptions::mlp0_rows_per_thread, {8, 16}));
  dims.push_back(count("mlp2_rows_per_thread", &SsFlowOptions::mlp2_rows_per_thread, {8, 16}));
  std::vector<Change> variants;
  for (auto [name, v] : std::vector<std::pair<const char*, FlashVariant>>{
           {"oct", FlashVariant::Oct}, {"quad", FlashVariant::Quad}, {"plain", FlashVariant::Plain}, {"tiled", FlashVariant::Tiled}})
    variants.push_back({std::string("attention=") + name, [v](SsFlowOptions& o) { o.attention = v; }});
  dims.push_back(variants);
  dims.push_back(count("attention_queries", &SsFlowOptions::attention_queries, {64, 128, 256}));
  dims.push_back(count("attention_keys", &SsFlowOptions::attention_keys, {16, 32, 64}));
  dims.push_back(count("attention_key_splits", &SsFlowOptions::attention_key_splits, {1, 2, 4}));
  dims.push_back(count("cross_attention_keys", &SsFlowOptions::cross_attention_keys, {16, 32, 40, 80}));
  dims.push_back(flag("attention_prefetch", &SsFlowOptions::attention_prefetch));
  dims.push_back(flag("attention_lazy_rescale", &SsFlowOptions::attention_lazy_rescale));
  dims.push_back(flag("attention_fused_pv", &SsFlowOptions::attention_fused_pv));
  std::vector<Change> tiled;
  for (auto [q, qt, kt] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{{64, 8, 8}, {128, 8, 8}, {64, 4, 8}, {64, 8, 4}})
    tiled.push_back({"attention_tiled=" + std::to_string(q) + "/" + std::to_string(qt) + "/" + std::to_string(kt),
                     [=](SsFlowOptions& o) { o.attention_tiled = {q, qt, kt, o.attention_tiled.prefetch}; }});
  dims.push_back(tiled);
  dims.push_back(flag("fuse_gelu", &SsFlowOptions::fuse_gelu));
  return dims;
}

}  // namespace

SsFlowTuneResult tune_ss_flow(SsFlowModel& model, const SsFlowTuneOptions& opt) {
  const auto start = Clock::now();
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  const gpu::Device& device = model.device();
  const auto& c = model.config();
  const int64_t n = c.in_channels * c.tokens();
  // The fixed input: a context pair, two latents at two timesteps (batch 2) and the first alone.
  const auto cond = gaussian_noise(100, size_t(opt.ctx_tokens * c.cond_channels));
  const auto neg = gaussian_noise(101, size_t(opt.ctx_tokens * c.cond_channels));
  const auto x2 = gaussian_noise(7, size_t(2 * n));
  const std::vector<float> x1(x2.begin(), x2.begin() + n);
  const std::vector<double> t2 = {0.8, 0.6}, t1 = {0.8};
  // How often the sampler runs each forward: the score weights.
  const auto ts = flow_schedule(opt.sampler.steps, opt.sampler.rescale_t);
  int guided = 0;
  for (int i = 0; i < opt.sampler.steps; i++) guided += guided_at(ts[size_t(i)], opt.sampler) ? 1 : 0;
  const int single = opt.sampler.steps - guided;

  SsFlowOptions reference_options;
  reference_options.int8 = false;
  model.set_options(reference_options);
  model.set_context(cond, neg, opt.ctx_tokens);
  const auto ref1 = model.forward(x1, t1), ref2 = model.forward(x2, t2);

  SsFlowTuneResult r;
  std::vector<SsFlowOptions> seen;  // as fitted to the device
  std::optional<SsFlowOptions> best, best_f32;
  double best_f32_ms = 0;
  // Times the forwards the sampler runs: a guided step (batch 2, its first part at batch 1) and an
  // unguided one, each a submit the GPU finishes before the next (as the sampler's steps).
  auto time_ms = [&]() {
    auto one = [&](bool g) {
      std::vector<double> v;
      for (int i = 0; i <= opt.repeats; i++) {
        const auto s = Clock::now();
        gpu::Recorder rec(device);
        if (g) model.record_guided_forward(rec);
        else model.record_forward(rec, 1);
        rec.submit();
        device.wait_idle();
        if (i > 0) v.push_back(1e3 * seconds_since(s));  // the first run compiles and warms up
      }
      return median(v);
    };
    model.set_timesteps({0.8, 0.8});
    return guided * one(true) + single * one(false);
  };
  auto evaluate = [&](const std::string& label, const SsFlowOptions& o) -> bool {
    SsFlowTuneResult::Row row{label, "", 0, 0};
    try {
      model.set_options(o);
    } catch (const Error& e) {
      r.failed++;
      row.outcome = std::string("failed: ") + e.what();
      r.rows.push_back(row);
      return false;
    }
    const SsFlowOptions& fitted = model.options();
    if (std::find(seen.begin(), seen.end(), fitted) != seen.end()) {
      r.duplicates++;
      return false;  // the device turned it into a choice already checked
    }
    seen.push_back(fitted);
    const bool int8 = uses_int8(fitted);
    row.rel_l2 = std::max(tune::rel_l2(model.forward(x1, t1), ref1), tune::rel_l2(model.forward(x2, t2), ref2));
    const double tolerance = int8 ? opt.int8_tolerance : opt.f32_tolerance;
    if (!(row.rel_l2 <= tolerance)) {
      r.rejected++;
      char what[96];
      std::snprintf(what, sizeof what, "rejected: rel L2 %.2e > %.0e", row.rel_l2, tolerance);
      row.outcome = what;
      r.rows.push_back(row);
      say(label + ": " + row.outcome);
      return false;
    }
    r.checked++;
    row.score_ms = time_ms();
    const bool better = !best || row.score_ms < r.best_ms;
    if (better) {
      best = fitted;
      r.best_ms = row.score_ms;
    }
    if (!int8 && (!best_f32 || row.score_ms < best_f32_ms)) {
      best_f32 = fitted;
      best_f32_ms = row.score_ms;
    }
    row.outcome = better ? "best" : "slower";
    r.rows.push_back(row);
    char line[160];
    std::snprintf(line, sizeof line, "%s: rel L2 %.1e, %.2f ms%s", label.c_str(), row.rel_l2, row.score_ms, better ? " (best)" : "");
    say(line);
    return better;
  };

  evaluate("defaults", SsFlowOptions{});
  if (!best) throw Error("the default ss-flow options do not run on this device or miss the reference", "ember tune --stage");
  r.default_ms = r.best_ms;
  for (const auto& dim : search_space(device.adapter().dot4_i8_packed)) {
    for (const auto& change : dim) {
      if (seconds_since(start) > opt.budget_s ||
          (opt.max_choices > 0 && r.checked + r.rejected + r.failed >= opt.max_choices)) {
        r.budget_hit = true;
        break;
      }
      SsFlowOptions o = *best;
      change.apply(o);
      if (o == *best) continue;
      evaluate(change.label, o);
    }
    if (r.budget_hit) break;
  }
  r.best = *best;
  if (uses_int8(r.best)) {
    // The whole sampler: int8's per-forward error, compounded over the steps, against the budget.
    say("checking the int8 choice's final latent against the reference path");
    const auto noise = gaussian_noise(3, size_t(n));
    FlowSampler sampler(model);
    model.set_options(reference_options);
    const auto ref = sampler.sample(noise, opt.sampler);
    model.set_options(r.best);
    r.latent_rel_l2 = tune::rel_l2(sampler.sample(noise, opt.sampler), ref);
    if (!(r.latent_rel_l2 <= opt.latent_budget)) {
      r.int8_dropped = true;
      r.best = *best_f32;
      r.best_ms = best_f32_ms;
    }
    char line[160];
    std::snprintf(line, sizeof line, "final latent rel L2 %.2e (budget %.0e)%s", r.latent_rel_l2, opt.latent_budget,
                  r.int8_dropped ? ": int8 dropped, the best f32 choice kept" : "");
    say(line);
  }
  model.set_options(r.best);
  r.seconds = seconds_since(start);
  return r;
}

nlohmann::json SsFlowTuneResult::to_json() const {
  nlohmann::json rows_j = nlohmann::json::array();
  for (const auto& row : rows)
    rows_j.push_back({{"change", row.change}, {"outcome", row.outcome}, {"rel_l2", row.rel_l2}, {"score_ms", row.score_ms}});
  return {{"default_ms", default_ms}, {"best_ms", best_ms}, {"checked", checked}, {"rejected", rejected}, {"failed", failed},
          {"duplicates", duplicates}, {"latent_rel_l2", latent_rel_l2}, {"int8_dropped", int8_dropped}, {"budget_hit", budget_hit},
          {"seconds", seconds}, {"best", options_to_json(best)}, {"rows", rows_j}};
}

std::string SsFlowTuneResult::table() const {
  std::string s;
  char line[256];
  for (const auto& row : rows) {
    std::snprintf(line, sizeof line, "  %-32s %9.3f ms  rel L2 %.1e  %s\n", row.change.c_str(), row.score_ms, row.rel_l2, row.outcome.c_str());
    s += line;
  }
  std::snprintf(line, sizeof line,
                "%d choices checked, %d rejected, %d failed to build%s; sampler forwards %.3f ms with the defaults, %.3f ms tuned "
                "(%.2fx)%s\n",
                checked, rejected, failed, budget_hit ? ", search stopped (budget or choice limit)" : "", default_ms, best_ms, best_ms > 0 ? default_ms / best_ms : 0.0,
                best.int8 ? ", int8 linears" : "");
  s += line;
  if (latent_rel_l2 >= 0) {
    std::snprintf(line, sizeof line, "int8 final latent vs f32 path: rel L2 %.2e%s\n", latent_rel_l2, int8_dropped ? " (over budget: dropped)" : "");
    s += line;
  }
  return s;
}

}  // namespace ember::trellis
