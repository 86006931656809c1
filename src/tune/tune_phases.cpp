#include "tune/tune_phases.h"

#include <algorithm>
#include <optional>

namespace ember::tune {
namespace {

constexpr double kMinPrefillSlotS = 0.5;  // seconds per prefill matmul shape below which it is not searched
constexpr int64_t kPrefillTuneTokens = 1024;  // chunk the prefill matmuls are tuned at (`ember bench llm --prompt` default)

kernels::MatvecGeometry to_kernel(const formats::Geometry& g) {
  return {uint32_t(g.workgroup_size), uint32_t(g.subgroup_size), uint32_t(g.rows_per_subgroup), uint32_t(g.subgroups_per_row)};
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

const MatvecShapeResult* best_of(const TuneResult& res, const std::string& key) {
  for (const auto& r : res.matvec)
    if (r.shape.key == key) return &r;
  return nullptr;
}

}  // namespace

// The phase's time is split evenly over the shapes still to search, so one that ends early
// leaves its time to the rest.
void tune_matvec_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  std::vector<MatrixShape> shapes;
  for (const auto& s : matrix_shapes(ctx.pack.shape()))
    if (!(ctx.pair_fixed_on && (s.key == "mlp_gate_up" || s.key == "mlp_down"))) shapes.push_back(s);
  for (size_t i = 0; i < shapes.size(); i++) {
    const MatrixShape& s = shapes[i];
    const double left = std::max(0.0, end - seconds_since(ctx.t0));
    const auto deadline = at(Clock::now(), left / double(shapes.size() - i));
    auto w = ctx.weights->matrix(s.prefix, s.rows, s.cols);
    auto current = current_choices(ctx.pack, s.key);
    auto space = matvec_space(ctx.device, current);
    std::optional<MatvecConfigChoice> input;
    if (!current.empty()) input = current.front();
    MatvecShapeResult r = search_matvec(ctx.kernels, ctx.timer, s, w, space, deadline, input);
    res.budget_hit |= r.budget_hit;
    char line[256];
    std::snprintf(line, sizeof line, "matvec %-13s %5ux%-5u %3d/%zu configs  default %8.2f us  best %8.2f us (%s)", s.key.c_str(), s.rows,
                  s.cols, r.tried, space.size() + 1, r.reference.us, r.best.us, r.best.config.describe().c_str());
    ctx.say(line);
    res.matvec.push_back(std::move(r));
  }
  ctx.matvec_done = Clock::now();
}

// normFuse: every shape whose input is a norm of the residual; its window ends before the flash
// and MLP phases, whose own deadlines absorb an overrun here.
void tune_norm_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  std::vector<MatrixShape> ns;
  std::vector<MatvecConfigChoice> nc;
  std::vector<kernels::Q4Matrix> nw;
  for (const auto& r : res.matvec) {
    const std::string& k = r.shape.key;
    // gate_up is here only where it was searched (mlpPair not fixed on).
    if (k == "conv_in_proj" || k == "attn_qkv" || k == "head" || k == "mlp_gate_up") {
      ns.push_back(r.shape);
      nc.push_back(r.best.config);
      nw.push_back(ctx.weights->matrix(r.shape.prefix, r.shape.rows, r.shape.cols));
    }
  }
  if (ns.empty()) return;
  // A norm shape costs about two matvec configurations (a compile and two timings).
  int tried = 0;
  for (const auto& r : res.matvec) tried += r.tried;
  const auto per_config = tried > 0 ? (ctx.matvec_done - ctx.t0) / tried : Clock::duration::zero();
  res.norm = search_norm_fusion(ctx.kernels, ctx.timer, ns, nc, nw, float(ctx.pack.shape().eps()), at(ctx.t0, end), 2 * per_config);
  res.budget_hit |= res.norm->budget_hit;
  char line[200];
  std::snprintf(line, sizeof line, "norm   fused into matvecs %8.2f us per step, separate %8.2f us -> normFuse %s", res.norm->fused_total_us,
                res.norm->separate_total_us, res.norm->budget_hit ? "unchanged (budget reached)" : res.norm->norm_fuse ? "on" : "off");
  ctx.say(line);
}

// Flash-decoding blocks at the pack's plan position and at each position of its flash optima.
void tune_flash_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  const auto& rt = ctx.pack.runtime();
  std::vector<uint32_t> positions;
  auto add_position = [&](int64_t p) {
    p = std::min<int64_t>(p, ctx.capacity);
    if (p > 0 && std::find(positions.begin(), positions.end(), uint32_t(p)) == positions.end()) positions.push_back(uint32_t(p));
  };
  add_position(rt.plan_position);
  for (const auto& o : rt.flash_optima) add_position(o.positions);
  std::sort(positions.begin(), positions.end());
  if (!ctx.has_attention || positions.empty()) return;
  FlashSearch fs_opts;
  fs_opts.padding = uint32_t(std::max<int64_t>(0, ctx.pack.candidate().padding));
  FlashResult fr = search_flash(ctx.kernels, ctx.timer, ctx.pack.shape(), positions, fs_opts, at(ctx.t0, end));
  res.flash = std::move(fr.points);
  res.flash_direct = std::move(fr.direct);
  std::string widths;
  for (const auto& [w, us] : res.flash_direct.tried)  // appended piecewise: GCC 12 misreads `" " + std::string` (-Wrestrict)
    widths.append(" ").append(std::to_string(w)).append(": ").append(fixed2(us)).append(" us");
  if (!widths.empty())
    ctx.say("flash  one block at " + std::to_string(positions.front()) + " positions, by threads:" + widths + " -> " +
            std::to_string(res.flash_direct.workgroup));
  for (const auto& p : res.flash) {
    res.budget_hit |= p.budget_hit;
    char line[160];
    std::snprintf(line, sizeof line, "flash  %5u positions  1 block %8.2f us  best %2u blocks %8.2f us", p.positions, p.one_block_us,
                  p.best_blocks, p.best_us);
    ctx.say(line);
  }
}

// The fused MLP's slices, workgroup and f16 down products, where mlpPair is on in the input or
// may become so (--allow-mlp-pair).
void tune_mlp_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  const auto& input = ctx.pack.candidate();
  const auto& shape = ctx.pack.shape();
  res.mlp_pair = input.mlp_pair && !input.unfused;
  if (!ctx.search_mlp_phase) {
    res.mlp_note = "mlpPair is off in the input candidate: kept off (--allow-mlp-pair to consider the fused MLP, which makes down.kquant the model's down weight)";
    return;
  }
  const std::string L0 = formats::layer_prefix(0);
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn);
  auto gate_up = ctx.weights->matrix(L0 + "mlp.gate_up", 2 * F, H);
  auto kquant = ctx.weights->matrix(L0 + "mlp.down", F, H, /*kmajor=*/true);
  std::vector<MlpChoice> first;
  if (input.mlp_slices > 0 && input.mlp_workgroup > 0)
    first.push_back({uint32_t(input.mlp_slices), uint32_t(input.mlp_workgroup), input.mlp_half_product == "down"});
  res.mlp = search_mlp(ctx.kernels, ctx.timer, shape, gate_up, kquant, first, at(ctx.t0, end));
  res.budget_hit |= res.mlp->budget_hit;
  char line[200];
  std::snprintf(line, sizeof line, "mlp    fused  default %8.2f us  best %8.2f us (slices %u, workgroup %u%s)", res.mlp->reference_us,
                res.mlp->best_us, res.mlp->best.slices, res.mlp->best.workgroup, res.mlp->best.half_product ? ", f16 down products" : "");
  ctx.say(line);
  if (!ctx.pair_by_step) res.mlp_note = "mlpPair kept on from the input candidate; slices, workgroup and f16 down products tuned";
}

// A layer's out projection + MLP as one dispatch, where decode runs the unfused MLP with the ffn
// norm in the gate_up matvec (what the one dispatch replaces).
void tune_residual_mlp_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  const auto& input = ctx.pack.candidate();
  const auto& shape = ctx.pack.shape();
  const bool norm_fused = !res.norm || res.norm->budget_hit || res.norm->norm_fuse;
  const auto deadline = at(ctx.t0, end);
  if (!((!res.mlp_pair || ctx.pair_by_step) && !input.unfused && norm_fused && Clock::now() < deadline)) return;
  const std::string L0 = formats::layer_prefix(0);
  const bool attn0 = shape.layer_types.front() == formats::LayerType::Attention;
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), Q = uint32_t(shape.q_rows());
  const auto* proj = best_of(res, attn0 ? "attn_o_proj" : "conv_out_proj");
  const auto* gu = best_of(res, "mlp_gate_up");
  const auto* dn = best_of(res, "mlp_down");
  if (!(proj && gu && dn)) return;
  ResidualMlpMatrices rm{ctx.weights->matrix(L0 + (attn0 ? "attn.o_proj" : "conv.out_proj"), H, attn0 ? Q : H),
                         ctx.weights->matrix(L0 + "mlp.gate_up", 2 * F, H), ctx.weights->matrix(L0 + "mlp.down", H, F), proj->best.config,
                         gu->best.config, dn->best.config};
  res.residual_mlp = search_residual_mlp(ctx.kernels, ctx.timer, shape, rm, deadline);
  res.budget_hit |= res.residual_mlp->budget_hit;
  char line[200];
  std::snprintf(line, sizeof line, "layer  out projection + MLP: 3 dispatches %8.2f us, one dispatch best %8.2f us -> residualMlpWorkgroups %u",
                res.residual_mlp->separate_us, res.residual_mlp->best_us, res.residual_mlp->workgroups);
  ctx.say(line);
}

// Prefill matmul geometry per shape, at one full prefill chunk; each shape's winner is measured
// first for the shapes after it.
void tune_prefill_phase(TuneContext& ctx, double end) {
  TuneResult& res = ctx.res;
  const auto& shape = ctx.pack.shape();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn);
  const uint32_t tokens = uint32_t(std::max<int64_t>(1, std::min<int64_t>(kPrefillTuneTokens, ctx.capacity)));
  std::vector<MatrixShape> mats;
  for (const auto& s : matrix_shapes(shape))
    if (s.key != "head") mats.push_back(s);
  std::vector<kernels::MatmulGeometry> first;
  for (size_t i = 0; i < mats.size(); i++) {
    const MatrixShape& s = mats[i];
    const bool kmajor = res.mlp_pair && s.key == "mlp_down";  // the down copy this candidate makes the model
    const auto w = kmajor ? ctx.weights->matrix(s.prefix, F, H, /*kmajor=*/true) : ctx.weights->matrix(s.prefix, s.rows, s.cols);
    const double left = std::max(0.0, end - seconds_since(ctx.t0));
    // The default geometry of a shape is always measured once started (a pipeline compile
    // and a chunk-sized run): start a shape only with a useful slot left.
    if (left / double(mats.size() - i) < kMinPrefillSlotS) {
      res.budget_hit = true;
      ctx.say("prefill: budget spent, " + std::to_string(mats.size() - i) + " shapes keep the default geometry");
      break;
    }
    const auto deadline = at(Clock::now(), left / double(mats.size() - i));
    MatmulShapeResult r = search_matmul(ctx.kernels, ctx.timer, s, w, kmajor, tokens, matmul_space(ctx.device, first), deadline);
    res.budget_hit |= r.budget_hit;
    if (std::find(first.begin(), first.end(), r.best) == first.end()) first.insert(first.begin(), r.best);  // winners first
    char line[256];
    std::snprintf(line, sizeof line, "prefill %-13s %5ux%-5u T=%u %3d configs  default %8.1f us  best %8.1f us (%s, %.1f TFLOP/s)",
                  s.key.c_str(), s.rows, s.cols, tokens, r.tried, r.reference_us, r.best_us, kernels::matmul_geometry_name(r.best).c_str(),
                  r.best_tflops());
    ctx.say(line);
    res.prefill.push_back(std::move(r));
  }
}

}  // namespace ember::tune
