// The tune phase that ranks choices by whole decode steps (tune_phases.h).
#include <algorithm>
#include <functional>

#include "llm/lfm2_model.h"
#include "tune/decode_step.h"
#include "tune/tune_phases.h"

namespace ember::tune {
namespace {

constexpr int64_t kStepCheckContext = 128;    // positions the whole-step checks run at (issue 6's short context)
constexpr double kStepsLastFraction = 0.93;   // of the budget: the whole-step rounds after the first end by then
// Options the whole-step rounds compare: the one-dispatch layer's grids, the head's geometries, the
// one-block attention's widths (the fastest alone of each).
constexpr size_t kStepGrids = 5, kStepHeads = 3, kStepWidths = 3;
constexpr const char* kPairOption = "fused MLP (mlpPair)";

}  // namespace

// What only whole decode steps rank. Timed alone, a kernel meets an idle GPU and a flushed
// cache; in the decode chain the matvecs find their weights in L2 (each prefetches the next
// one's) and a grid starts on the previous dispatch's tail. A fresh tune that took its
// one-dispatch layer grid and head geometry from isolated timings decoded clearly slower than an
// earlier one, and the fused MLP that won alone decoded far slower (bench/PERFORMANCE.md,
// 451e503 and 6b77737). So, one choice after the other, each option a whole model on the
// one weight upload timed over decode steps, the current best timed again in each round: the
// one-dispatch layer's best grids [or the fused MLP, with --allow-mlp-pair], the head's best
// geometries, the one-block attention's best widths.
// `end` is where the whole-step checks start at all (with a pair to decide: always).
void tune_step_phase(TuneContext& ctx, double end) {
  struct Option {
    std::string name;
    std::function<void(formats::Candidate&)> apply;  // onto the current best candidate
    std::function<void()> commit;                    // into `res`, when it wins
  };
  TuneResult& res = ctx.res;
  const bool pair_by_step = ctx.pair_by_step;
  const double steps_last = ctx.budget * kStepsLastFraction;
  const uint32_t steps = 32;
  const uint32_t context = uint32_t(std::max<int64_t>(1, std::min<int64_t>(kStepCheckContext, llm::Lfm2Model::capacity_of(ctx.pack) - steps - 2)));
  formats::RuntimeFile current = tuned_file(ctx.pack.file(), res, ctx.capacity);
  TuneResult::StepCheck check{context};
  Clock::duration per_option{};  // what an option cost in the last round (model build and timing)
  // Rounds after the first start only where they should end by steps_last at the last round's
  // pace (a GPU's round is mostly its fixed warm-up, so this overestimates there).
  auto fits = [&](size_t options) { return Clock::now() + per_option * int64_t(options) < at(ctx.t0, steps_last); };
  auto round = [&](const std::vector<Option>& options) {
    if (options.size() < 2) return;
    const auto started = Clock::now();
    std::vector<formats::RuntimeFile> files(options.size(), current);
    for (size_t i = 0; i < options.size(); i++) options[i].apply(files[i].candidate);
    const auto us = median_decode_steps(ctx.pack, ctx.weights, ctx.kernels, files, context, steps);
    size_t best = 0;
    for (size_t i = 0; i < options.size(); i++) {
      check.tried.push_back({options[i].name, us[i]});
      if (us[i] < us[best]) best = i;
      char line[200];
      std::snprintf(line, sizeof line, "step   %-48s %8.2f us", options[i].name.c_str(), us[i]);
      ctx.say(line);
    }
    if (pair_by_step && options.back().name == kPairOption) {
      double unfused = us.front();
      for (size_t i = 0; i + 1 < options.size(); i++) unfused = std::min(unfused, us[i]);
      res.mlp_pair_check = TuneResult::MlpPairCheck{context, us.back(), unfused};
    }
    check.chosen.push_back(options[best].name);
    options[best].commit();
    current = files[best];
    per_option = (Clock::now() - started) / int64_t(options.size());
  };
  if (!pair_by_step && Clock::now() >= at(ctx.t0, end)) {
    res.budget_hit = true;
    ctx.say("step   budget spent: the isolated timings decide");
    return;
  }
  ctx.say("step   whole decode steps at " + std::to_string(context) + " positions");
  // Round 1: the one-dispatch layer's fastest grids alone (the winner first), [the fused MLP].
  std::vector<Option> grids;
  if (res.residual_mlp && !res.residual_mlp->tried.empty()) {
    std::vector<uint32_t> counts{res.residual_mlp->workgroups};
    std::vector<ResidualMlpTry> usable;
    for (const auto& t : res.residual_mlp->tried)
      if (t.us > 0 && t.workgroups != counts.front()) usable.push_back(t);
    std::sort(usable.begin(), usable.end(), [](const auto& a, const auto& b) { return a.us < b.us; });
    for (size_t i = 0; i < usable.size() && counts.size() < kStepGrids; i++) counts.push_back(usable[i].workgroups);
    for (uint32_t n : counts)
      grids.push_back({"residualMlpWorkgroups " + std::to_string(n),
                       [n, pair = pair_by_step](formats::Candidate& c) {
                         c.extra["residualMlpWorkgroups"] = n;
                         if (pair) c.mlp_pair = false;
                       },
                       [&res, n, pair = pair_by_step] {
                         res.residual_mlp->workgroups = n;
                         if (pair) res.mlp_pair = false;
                       }});
  } else if (pair_by_step) {
    grids.push_back({"unfused MLP", [](formats::Candidate& c) { c.mlp_pair = false; }, [&res] { res.mlp_pair = false; }});
  }
  if (pair_by_step) {
    const MlpChoice best = res.mlp->best;
    grids.push_back({kPairOption,
                     [best](formats::Candidate& c) {
                       c.mlp_pair = true;
                       c.mlp_slices = best.slices;
                       c.mlp_workgroup = best.workgroup;
                       c.mlp_half_product = best.half_product ? "down" : "none";
                       c.extra.erase("residualMlpWorkgroups");
                     },
                     [&res] { res.mlp_pair = true; }});
  }
  round(grids);
  if (pair_by_step)
    res.mlp_note = std::string("--allow-mlp-pair: whole decode steps timed, mlpPair ") +
                   (res.mlp_pair ? "on (down.kquant is the model's down weight)" : "off (down.quant is the model's down weight)");
  // Round 2: the head's fastest geometries alone.
  auto head = std::find_if(res.matvec.begin(), res.matvec.end(), [](const auto& r) { return r.shape.key == "head"; });
  if (head != res.matvec.end() && fits(std::min(head->timed.size(), kStepHeads))) {
    std::vector<Option> heads;
    for (size_t i = 0; i < head->timed.size() && heads.size() < kStepHeads; i++) {
      const MatvecMeasurement m = head->timed[i];
      heads.push_back({"head " + m.config.describe(),
                       [m](formats::Candidate& c) {
                         for (auto& [key, mc] : c.matvec)
                           if (key == "head") {
                             mc.variant = kernels::q4_variant_name(m.config.variant);
                             mc.geometry = to_format(m.config.geometry);
                           }
                       },
                       [m, head] {
                         if (m.config.describe() != head->best.config.describe()) head->step_choice = m;
                       }});
    }
    round(heads);
  }
  // Round 3: the one-block attention's fastest widths alone.
  if (ctx.has_attention && fits(std::min(res.flash_direct.tried.size(), kStepWidths))) {
    auto widths = res.flash_direct.tried;
    std::sort(widths.begin(), widths.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    std::vector<Option> attention;
    for (size_t i = 0; i < widths.size() && attention.size() < kStepWidths; i++) {
      if (widths[i].second <= 0) continue;  // rejected: its output differed
      const uint32_t w = widths[i].first;
      attention.push_back({"one-block attention " + std::to_string(w) + " threads",
                           [w](formats::Candidate& c) { c.extra["flashDirectWorkgroup"] = w; },
                           [&res, w] { res.flash_direct.workgroup = w; }});
    }
    round(attention);
  }
  std::string chosen;
  for (const auto& c : check.chosen) chosen += (chosen.empty() ? "" : "; ") + c;
  if (!chosen.empty()) ctx.say("step   -> " + chosen);
  res.step_check = std::move(check);
}

}  // namespace ember::tune
