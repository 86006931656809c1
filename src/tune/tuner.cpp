#include "tune/tuner.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "llm/lfm2_model.h"
#include "llm/lfm2_weights.h"
#include "tune/decode_step.h"

namespace ember::tune {
namespace fs = std::filesystem;
namespace {

std::string fixed2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr double kMinPrefillSlotS = 0.5;  // seconds per prefill matmul shape below which it is not searched
constexpr int64_t kPrefillTuneTokens = 1024;  // chunk the prefill matmuls are tuned at (`ember bench llm --prompt` default)
constexpr int64_t kStepCheckContext = 128;    // positions the whole-step checks run at (issue 6's short context)
// Options the whole-step rounds compare: the one-dispatch layer's grids, the head's geometries, the
// one-block attention's widths (the fastest alone of each).
constexpr size_t kStepGrids = 5, kStepHeads = 3, kStepWidths = 3;
constexpr const char* kPairOption = "fused MLP (mlpPair)";

Clock::time_point at(Clock::time_point t0, double seconds) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

kernels::MatvecGeometry to_kernel(const formats::Geometry& g) {
  return {uint32_t(g.workgroup_size), uint32_t(g.subgroup_size), uint32_t(g.rows_per_subgroup), uint32_t(g.subgroups_per_row)};
}

formats::Geometry to_format(const kernels::MatvecGeometry& g) {
  formats::Geometry f;
  f.workgroup_size = g.workgroup_size;
  f.subgroup_size = g.subgroup_size;
  f.rows_per_subgroup = g.rows_per_subgroup;
  f.subgroups_per_row = g.subgroups_per_row;
  return f;
}

// The pack's own choices for a shape (its candidate entry, its knee): measured first.
std::vector<MatvecConfigChoice> current_choices(const formats::LlmPack& pack, const std::string& key) {
  std::vector<MatvecConfigChoice> out;
  kernels::Q4Variant dv = kernels::Q4Variant::carried;
  try {
    dv = kernels::parse_q4_variant(pack.runtime().dequant_variant);
  } catch (const std::exception&) {
  }
  if (const auto* mc = pack.candidate().matvec_for(key)) {
    try {
      out.push_back({kernels::parse_q4_variant(mc->variant), to_kernel(mc->geometry)});
    } catch (const std::exception&) {
    }
  }
  if (const auto* g = pack.runtime().knee_for(key)) out.push_back({dv, to_kernel(*g)});
  return out;
}

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

}  // namespace

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

  // mlpPair: kept from the input unless --allow-mlp-pair (then decided by the whole decode step,
  // the fused MLP against the unfused path as tuned).
  const bool pair_fixed_on = input.mlp_pair && !input.unfused && !options.allow_mlp_pair;
  const bool search_mlp_phase = (input.mlp_pair && !input.unfused) || options.allow_mlp_pair;
  const bool pair_by_step = options.allow_mlp_pair && !input.unfused;
  const bool has_attention = std::any_of(shape.layer_types.begin(), shape.layer_types.end(),
                                         [](formats::LayerType t) { return t == formats::LayerType::Attention; });
  // Phases in order: matvec geometries, norm fusion, flash blocks, the fused MLP, the one-dispatch
  // out projection + MLP, whole decode steps, prefill matmuls.
  const double matvec_end = budget * (pair_by_step ? 0.45 : search_mlp_phase ? 0.50 : 0.58);
  const double norm_end = budget * (pair_by_step ? 0.55 : search_mlp_phase ? 0.61 : 0.69);
  const double flash_end = budget * (pair_by_step ? 0.65 : search_mlp_phase ? 0.73 : 0.82);
  const double mlp_end = budget * (pair_by_step ? 0.75 : 0.82);
  const double residual_end = budget * (pair_by_step ? 0.80 : 0.86);
  const double steps_end = budget * (pair_by_step ? 0.86 : 0.90);  // starts the whole-step checks (with a pair: always)
  const double steps_last = budget * 0.93;  // the whole-step rounds after the first end by then
  const double prefill_end = budget * 0.97;

  // ---- matvec per shape ----
  std::vector<MatrixShape> shapes;
  for (const auto& s : matrix_shapes(shape))
    if (!(pair_fixed_on && (s.key == "mlp_gate_up" || s.key == "mlp_down"))) shapes.push_back(s);
  for (size_t i = 0; i < shapes.size(); i++) {
    const MatrixShape& s = shapes[i];
    const double left = std::max(0.0, matvec_end - seconds_since(t0));
    const auto deadline = at(Clock::now(), left / double(shapes.size() - i));
    auto w = weights->matrix(s.prefix, s.rows, s.cols);
    auto current = current_choices(pack, s.key);
    auto space = matvec_space(device, current);
    std::optional<MatvecConfigChoice> input;
    if (!current.empty()) input = current.front();
    MatvecShapeResult r = search_matvec(kernels, timer, s, w, space, deadline, input);
    res.budget_hit |= r.budget_hit;
    char line[256];
    std::snprintf(line, sizeof line, "matvec %-13s %5ux%-5u %3d/%zu configs  default %8.2f us  best %8.2f us (%s)", s.key.c_str(), s.rows,
                  s.cols, r.tried, space.size() + 1, r.reference.us, r.best.us, r.best.config.describe().c_str());
    say(line);
    res.matvec.push_back(std::move(r));
  }
  const auto matvec_done = Clock::now();
  auto best_of = [&](const std::string& key) -> const MatvecShapeResult* {
    for (const auto& r : res.matvec)
      if (r.shape.key == key) return &r;
    return nullptr;
  };

  // ---- norm fusion (normFuse): every shape whose input is a norm of the residual; its window
  // ends before the flash and MLP phases, whose own deadlines absorb an overrun here ----
  {
    std::vector<MatrixShape> ns;
    std::vector<MatvecConfigChoice> nc;
    std::vector<kernels::Q4Matrix> nw;
    for (const auto& r : res.matvec) {
      const std::string& k = r.shape.key;
      // gate_up is here only where it was searched (mlpPair not fixed on).
      if (k == "conv_in_proj" || k == "attn_qkv" || k == "head" || k == "mlp_gate_up") {
        ns.push_back(r.shape);
        nc.push_back(r.best.config);
        nw.push_back(weights->matrix(r.shape.prefix, r.shape.rows, r.shape.cols));
      }
    }
    if (!ns.empty()) {
      // A norm shape costs about two matvec configurations (a compile and two timings).
      int tried = 0;
      for (const auto& r : res.matvec) tried += r.tried;
      const auto per_config = tried > 0 ? (matvec_done - t0) / tried : Clock::duration::zero();
      res.norm = search_norm_fusion(kernels, timer, ns, nc, nw, float(shape.eps()), at(t0, norm_end), 2 * per_config);
      res.budget_hit |= res.norm->budget_hit;
      char line[200];
      std::snprintf(line, sizeof line, "norm   fused into matvecs %8.2f us per step, separate %8.2f us -> normFuse %s", res.norm->fused_total_us,
                    res.norm->separate_total_us, res.norm->budget_hit ? "unchanged (budget reached)" : res.norm->norm_fuse ? "on" : "off");
      say(line);
    }
  }
  // ---- flash-decoding blocks per position ----
  const int64_t capacity = pack.runtime().max_total_positions > 0 ? pack.runtime().max_total_positions : pack.runtime().max_positions;
  std::vector<uint32_t> positions;
  auto add_position = [&](int64_t p) {
    p = std::min<int64_t>(p, capacity);
    if (p > 0 && std::find(positions.begin(), positions.end(), uint32_t(p)) == positions.end()) positions.push_back(uint32_t(p));
  };
  add_position(pack.runtime().plan_position);
  for (const auto& o : pack.runtime().flash_optima) add_position(o.positions);
  std::sort(positions.begin(), positions.end());
  if (has_attention && !positions.empty()) {
    FlashSearch fs_opts;
    fs_opts.padding = uint32_t(std::max<int64_t>(0, input.padding));
    FlashResult fr = search_flash(kernels, timer, shape, positions, fs_opts, at(t0, flash_end));
    res.flash = std::move(fr.points);
    res.flash_direct = std::move(fr.direct);
    std::string widths;
    for (const auto& [w, us] : res.flash_direct.tried) widths += " " + std::to_string(w) + ": " + fixed2(us) + " us";
    if (!widths.empty())
      say("flash  one block at " + std::to_string(positions.front()) + " positions, by threads:" + widths + " -> " +
          std::to_string(res.flash_direct.workgroup));
    for (const auto& p : res.flash) {
      res.budget_hit |= p.budget_hit;
      char line[160];
      std::snprintf(line, sizeof line, "flash  %5u positions  1 block %8.2f us  best %2u blocks %8.2f us", p.positions, p.one_block_us,
                    p.best_blocks, p.best_us);
      say(line);
    }
  }

  // ---- fused MLP ----
  res.mlp_pair = input.mlp_pair && !input.unfused;
  if (!search_mlp_phase) {
    res.mlp_note = "mlpPair is off in the input candidate: kept off (--allow-mlp-pair to consider the fused MLP, which makes down.kquant the model's down weight)";
  } else {
    const std::string L0 = formats::layer_prefix(0);
    const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn);
    auto gate_up = weights->matrix(L0 + "mlp.gate_up", 2 * F, H);
    auto kquant = weights->matrix(L0 + "mlp.down", F, H, /*kmajor=*/true);
    std::vector<MlpChoice> first;
    if (input.mlp_slices > 0 && input.mlp_workgroup > 0)
      first.push_back({uint32_t(input.mlp_slices), uint32_t(input.mlp_workgroup), input.mlp_half_product == "down"});
    res.mlp = search_mlp(kernels, timer, shape, gate_up, kquant, first, at(t0, mlp_end));
    res.budget_hit |= res.mlp->budget_hit;
    char line[200];
    std::snprintf(line, sizeof line, "mlp    fused  default %8.2f us  best %8.2f us (slices %u, workgroup %u%s)", res.mlp->reference_us,
                  res.mlp->best_us, res.mlp->best.slices, res.mlp->best.workgroup, res.mlp->best.half_product ? ", f16 down products" : "");
    say(line);
    if (!pair_by_step) res.mlp_note = "mlpPair kept on from the input candidate; slices, workgroup and f16 down products tuned";
  }
  // ---- a layer's out projection + MLP as one dispatch, where decode runs the unfused MLP with the
  // ffn norm in the gate_up matvec (what the one dispatch replaces) ----
  const bool norm_fused = !res.norm || res.norm->budget_hit || res.norm->norm_fuse;
  const auto residual_deadline = at(t0, residual_end);
  if ((!res.mlp_pair || pair_by_step) && !input.unfused && norm_fused && Clock::now() < residual_deadline) {
    const std::string L0 = formats::layer_prefix(0);
    const bool attn0 = shape.layer_types.front() == formats::LayerType::Attention;
    const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), Q = uint32_t(shape.q_rows());
    const auto* proj = best_of(attn0 ? "attn_o_proj" : "conv_out_proj");
    const auto* gu = best_of("mlp_gate_up");
    const auto* dn = best_of("mlp_down");
    if (proj && gu && dn) {
      ResidualMlpMatrices rm{weights->matrix(L0 + (attn0 ? "attn.o_proj" : "conv.out_proj"), H, attn0 ? Q : H), weights->matrix(L0 + "mlp.gate_up", 2 * F, H),
                             weights->matrix(L0 + "mlp.down", H, F), proj->best.config, gu->best.config, dn->best.config};
      res.residual_mlp = search_residual_mlp(kernels, timer, shape, rm, residual_deadline);
      res.budget_hit |= res.residual_mlp->budget_hit;
      char line[200];
      std::snprintf(line, sizeof line, "layer  out projection + MLP: 3 dispatches %8.2f us, one dispatch best %8.2f us -> residualMlpWorkgroups %u",
                    res.residual_mlp->separate_us, res.residual_mlp->best_us, res.residual_mlp->workgroups);
      say(line);
    }
  }
  // ---- what only whole decode steps rank. Timed alone, a kernel meets an idle GPU and a flushed
  // cache; in the decode chain the matvecs find their weights in L2 (each prefetches the next
  // one's) and a grid starts on the previous dispatch's tail. A fresh tune that took its
  // one-dispatch layer grid and head geometry from isolated timings decoded clearly slower than an
  // earlier one, and the fused MLP that won alone decoded far slower (bench/PERFORMANCE.md,
  // 451e503 and 6b77737). So, one choice after the other, each option a whole model on the
  // one weight upload timed over decode steps, the current best timed again in each round: the
  // one-dispatch layer's best grids [or the fused MLP, with --allow-mlp-pair], the head's best
  // geometries, the one-block attention's best widths ----
  {
    struct Option {
      std::string name;
      std::function<void(formats::Candidate&)> apply;  // onto the current best candidate
      std::function<void()> commit;                    // into `res`, when it wins
    };
    const uint32_t steps = 32;
    const uint32_t context = uint32_t(std::max<int64_t>(1, std::min<int64_t>(kStepCheckContext, llm::Lfm2Model::capacity_of(pack) - steps - 2)));
    formats::RuntimeFile current = tuned_file(pack.file(), res, capacity);
    TuneResult::StepCheck check{context};
    Clock::duration per_option{};  // what an option cost in the last round (model build and timing)
    // Rounds after the first start only where they should end by steps_last at the last round's
    // pace (a GPU's round is mostly its fixed warm-up, so this overestimates there).
    auto fits = [&](size_t options) { return Clock::now() + per_option * int64_t(options) < at(t0, steps_last); };
    auto round = [&](const std::vector<Option>& options) {
      if (options.size() < 2) return;
      const auto started = Clock::now();
      std::vector<formats::RuntimeFile> files(options.size(), current);
      for (size_t i = 0; i < options.size(); i++) options[i].apply(files[i].candidate);
      const auto us = median_decode_steps(pack, weights, kernels, files, context, steps);
      size_t best = 0;
      for (size_t i = 0; i < options.size(); i++) {
        check.tried.push_back({options[i].name, us[i]});
        if (us[i] < us[best]) best = i;
        char line[200];
        std::snprintf(line, sizeof line, "step   %-48s %8.2f us", options[i].name.c_str(), us[i]);
        say(line);
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
    if (!pair_by_step && Clock::now() >= at(t0, steps_end)) {
      res.budget_hit = true;
      say("step   budget spent: the isolated timings decide");
    } else {
      say("step   whole decode steps at " + std::to_string(context) + " positions");
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
      if (has_attention && fits(std::min(res.flash_direct.tried.size(), kStepWidths))) {
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
      if (!chosen.empty()) say("step   -> " + chosen);
      res.step_check = std::move(check);
    }
  }
  // ---- prefill matmul geometry per shape, at one full prefill chunk ----
  {
    const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn);
    const uint32_t tokens = uint32_t(std::max<int64_t>(1, std::min<int64_t>(kPrefillTuneTokens, capacity)));
    std::vector<MatrixShape> mats;
    for (const auto& s : matrix_shapes(shape))
      if (s.key != "head") mats.push_back(s);
    std::vector<kernels::MatmulGeometry> first;
    for (size_t i = 0; i < mats.size(); i++) {
      const MatrixShape& s = mats[i];
      const bool kmajor = res.mlp_pair && s.key == "mlp_down";  // the down copy this candidate makes the model
      const auto w = kmajor ? weights->matrix(s.prefix, F, H, /*kmajor=*/true) : weights->matrix(s.prefix, s.rows, s.cols);
      const double left = std::max(0.0, prefill_end - seconds_since(t0));
      // The default geometry of a shape is always measured once started (a pipeline compile
      // and a chunk-sized run): start a shape only with a useful slot left.
      if (left / double(mats.size() - i) < kMinPrefillSlotS) {
        res.budget_hit = true;
        say("prefill: budget spent, " + std::to_string(mats.size() - i) + " shapes keep the default geometry");
        break;
      }
      const auto deadline = at(Clock::now(), left / double(mats.size() - i));
      MatmulShapeResult r = search_matmul(kernels, timer, s, w, kmajor, tokens, matmul_space(device, first), deadline);
      res.budget_hit |= r.budget_hit;
      if (std::find(first.begin(), first.end(), r.best) == first.end()) first.insert(first.begin(), r.best);  // winners first
      char line[256];
      std::snprintf(line, sizeof line, "prefill %-13s %5ux%-5u T=%u %3d configs  default %8.1f us  best %8.1f us (%s, %.1f TFLOP/s)",
                    s.key.c_str(), s.rows, s.cols, tokens, r.tried, r.reference_us, r.best_us, kernels::matmul_geometry_name(r.best).c_str(),
                    r.best_tflops());
      say(line);
      res.prefill.push_back(std::move(r));
    }
  }
  if (search_mlp_phase && !device.has_f16())
    res.unavailable.push_back("mlpHalfProduct (the fused MLP's down products in f16): this adapter has no shader-f16");

  res.file = tuned_file(pack.file(), res, capacity);
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
