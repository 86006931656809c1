// `ember bench ss-flow`: one forward at batch 1 and 2, a full default sampling run and a batch of
// samples of the TRELLIS sparse-structure flow stage; medians of repeats after a warm-up,
// per-kernel GPU time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/ss_flow_source.h"
#include "common/error.h"
#include "gpu/profiler.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"
#include "tune/compute_peaks.h"

namespace ember::cli {
namespace {

// REGION[@BATCH]=T,R,K[,SPLITS[,ROWS]] over `base` (its vec4 and prefetch choices kept).
std::pair<std::string, kernels::QMatmulGeometry> parse_matmul_override(const std::string& spec, kernels::QMatmulGeometry base) {
  const std::string where = "--matmul-override " + spec;
  const std::string hint = "write REGION[@BATCH]=T,R,K[,SPLITS[,ROWS]], e.g. mlp.0@2=16,16,16,1,16";
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("no REGION= before the geometry", where, hint);
  std::vector<uint32_t> v;
  std::stringstream in(spec.substr(eq + 1));
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const unsigned long x = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || x == 0 || x > 4096) throw Error("'" + item + "' is not a positive count", where, hint);
    v.push_back(uint32_t(x));
  }
  if (v.size() < 3 || v.size() > 5) throw Error("expected 3 to 5 numbers after '='", where, hint);
  base.wg_tokens = v[0];
  base.wg_rows = v[1];
  base.k_step = v[2];
  base.k_splits = v.size() > 3 ? v[3] : 1;
  if (v.size() > 4) base.rows_per_thread = v[4];
  return {spec.substr(0, eq), base};
}

// The options that set tuning choices (a candidate's domain).
const std::set<std::string> kTuningOptions = {
    "--matmul", "--mlp2-splits", "--square-splits", "--fuse-gelu", "--attn-keys", "--attn-no-prefetch", "--narrow-matmul",
    "--matmul-override", "--mlp0-rows", "--mlp2-rows", "--matmul-rows", "--matmul-scalar", "--matmul-no-prefetch", "--no-quad",
    "--attn-queries", "--attn-key-splits", "--cross-attn-keys", "--attn-lazy-rescale", "--attn-fused-pv", "--attention",
    "--attn-geometry", "--int8"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Achieved rate per kernel against the measured ceilings: the int8 matmuls (those with a ".quant"
// pass) against the packed-dot peak, everything else against the f32 FMA peak.
std::string rate_table(const trellis::SsFlowModel& model, int batch, const gpu::Profiler& prof, const tune::ComputePeaks& peaks,
                       nlohmann::json& out) {
  std::map<std::string, double> ms;
  for (const auto& s : prof.summary()) ms[s.name] += s.total_ms;
  std::string text = "  kernel                         ms        rate (T/s)        ceiling  of ceiling  (+quant/sum passes ms)\n";
  out = nlohmann::json::array();
  for (const auto& [region, flops] : model.region_flops(batch)) {
    auto it = ms.find(region);
    if (it == ms.end() || it->second <= 0) continue;
    const bool int8 = ms.count(region + ".quant") > 0;
    const double passes = (ms.count(region + ".quant") ? ms[region + ".quant"] : 0.0) + (ms.count(region + ".sum") ? ms[region + ".sum"] : 0.0);
    const double rate = flops / (it->second * 1e-3) / 1e12, ceiling = int8 ? peaks.dot4_tops : peaks.fma_tflops;
    char line[200];
    snprintf(line, sizeof line, "  %-28s %7.3f  %9.4f %s  %9.4f  %8.1f%%   %.3f\n", region.c_str(), it->second, rate, int8 ? "TOPS  " : "TFLOPS",
             ceiling, ceiling > 0 ? 100 * rate / ceiling : 0.0, passes);
    text += line;
    out.push_back({{"region", region}, {"ms", it->second}, {"passes_ms", passes}, {"int8", int8}, {"rate_t", rate},
                   {"ceiling_t", ceiling}, {"fraction_of_ceiling", ceiling > 0 ? rate / ceiling : 0.0}});
  }
  return text;
}

const char* attention_name(kernels::FlashVariant v) {
  switch (v) {
    case kernels::FlashVariant::Plain: return "plain";
    case kernels::FlashVariant::Quad: return "quad";
    case kernels::FlashVariant::Oct: return "oct";
    case kernels::FlashVariant::Tiled: return "tiled";
  }
  return "?";
}

}  // namespace

void add_bench_ss_flow(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("ss-flow", "TRELLIS sparse-structure flow: forward at batch 1 and 2, full sampling run");
  // Model options bind straight into SsFlowOptions, so its defaults are the command's; the
  // geometries (3 numbers each) and the variant name are applied where given.
  struct Opts {
    GpuOptions gpu;
    std::string stage, candidate;
    bool no_candidate = false;
    bool synthetic = false, json = false, no_sample = false, batch2_only = false, no_quad = false, scalar_matmul = false,
         matmul_no_prefetch = false, attn_no_prefetch = false;
    int repeats = 5, blocks = 0, resolution = 0, batch_samples = 4;
    std::vector<uint32_t> matmul, narrow_matmul, attn_geometry;
    std::vector<std::string> matmul_overrides;
    std::string attention;
    trellis::SsFlowOptions mo;
    trellis::SamplerOptions sampler;
  };
  auto o = std::make_shared<Opts>();
  auto dims_text = [](const kernels::QMatmulGeometry& g) {
    return std::to_string(g.wg_tokens) + " " + std::to_string(g.wg_rows) + " " + std::to_string(g.k_step);
  };
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "stage directory (a packed sparseStructureFlow stage)");
  cmd->add_flag("--synthetic", o->synthetic, "random weights of the seed shape instead of a stage");
  cmd->add_option("--blocks", o->blocks, "with --synthetic: number of blocks (default: the seed's 12)");
  cmd->add_option("--resolution", o->resolution, "with --synthetic: grid side (default: the seed's 16)");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--repeats", o->repeats, "timed repeats after one warm-up");
  cmd->add_flag("--no-sample", o->no_sample, "skip the full sampling run");
  cmd->add_option("--steps", o->sampler.steps, "sampling steps");
  cmd->add_option("--batch-samples", o->batch_samples,
                  "also sample a batch of this many latents, one prompt each, as `ember ss-flow` runs a batch (0: skip)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--matmul", o->matmul, "qmatmul geometry: threads along tokens, along rows, K step (default " + dims_text(o->mo.matmul) + ")")->expected(3);
  cmd->add_option("--mlp2-splits", o->mo.mlp2_k_splits, "split-K chunks for mlp.2 (K = 3072; 1 = none)")
      ->check(CLI::Range(1, 48))
      ->capture_default_str();
  cmd->add_option("--square-splits", o->mo.square_k_splits, "split-K chunks for the 768 x 768 matmuls (self to_out, cross to_q/to_out; 1 = none)")
      ->check(CLI::Range(1, 12))
      ->capture_default_str();
  cmd->add_flag("--fuse-gelu", o->mo.fuse_gelu, "GELU in the mlp.0 matmul epilogue");
  cmd->add_option("--attn-keys", o->mo.attention_keys, "keys per flash-attention tile (quad and oct variants)")->capture_default_str();
  cmd->add_flag("--attn-no-prefetch", o->attn_no_prefetch, "quad and oct flash attention: load each K/V tile only when it is used (no register prefetch)");
  cmd->add_option("--narrow-matmul", o->narrow_matmul,
                  "geometry of the 768 x 768 matmuls and batch-1 to_qkv: threads along tokens, along rows, K step (default " +
                      dims_text(o->mo.narrow_matmul.value_or(o->mo.matmul)) + ")")
      ->expected(3);
  cmd->add_option("--matmul-override", o->matmul_overrides,
                  "one matmul's geometry, replacing the rules: REGION[@BATCH]=T,R,K[,SPLITS[,ROWS]] (threads along tokens, along "
                  "rows, K step, split-K chunks, outputs per thread along rows), REGION a kernel name of the profile, e.g. "
                  "self_attn.to_qkv@2=16,8,16,2; repeatable");
  cmd->add_option("--mlp0-rows", o->mo.mlp0_rows_per_thread, "mlp.0 outputs per thread along rows (8 or 16)")
      ->check(CLI::IsMember({8, 16}))
      ->capture_default_str();
  cmd->add_option("--mlp2-rows", o->mo.mlp2_rows_per_thread, "mlp.2 at batch 2: outputs per thread along rows (8 or 16)")
      ->check(CLI::IsMember({8, 16}))
      ->capture_default_str();
  cmd->add_option("--matmul-rows", o->mo.matmul.rows_per_thread, "qmatmul outputs per thread along rows (8 or 16)")
      ->check(CLI::IsMember({8, 16}))
      ->capture_default_str();
  cmd->add_flag("--matmul-scalar", o->scalar_matmul, "qmatmul with scalar workgroup-memory reads (default: vec4)");
  cmd->add_flag("--matmul-no-prefetch", o->matmul_no_prefetch, "qmatmul: load each K step only when it is used (no register prefetch)");
  cmd->add_flag("--int8", o->mo.int8, "the block linears on packed int8 dot products (where the adapter has them)");
  add_candidate_options(*cmd, o->candidate, o->no_candidate);
  cmd->add_flag("--no-quad", o->no_quad, "plain flash attention instead of the oct variant");
  cmd->add_flag("--batch2-only", o->batch2_only, "forward at batch 2 only (for sweeps)");
  cmd->add_option("--attn-queries", o->mo.attention_queries,
                  "queries per flash-attention workgroup (plain, quad, oct; at batch 1 the quad self attention, and oct with one key split, runs half of them)")
      ->capture_default_str();
  cmd->add_option("--attn-key-splits", o->mo.attention_key_splits,
                  "oct: workgroups per query block the batch-1 self attention splits its keys over (1: none)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--cross-attn-keys", o->mo.cross_attention_keys, "quad, oct: keys per tile of the cross attention (a multiple of 8)")
      ->capture_default_str();
  cmd->add_flag("--attn-lazy-rescale,!--attn-no-lazy-rescale", o->mo.attention_lazy_rescale,
                "oct: rescale only when a running max grows by more than 2^8 (the default; --attn-no-lazy-rescale: at every new max)");
  cmd->add_flag("--attn-fused-pv", o->mo.attention_fused_pv, "oct: each key's exponentials gathered and used at once");
  cmd->add_option("--attention", o->attention, "flash attention variant: plain, quad (4 queries per lane quad), oct (8 per lane octet; the default) or tiled (FA2-style register tiles)")
      ->check(CLI::IsMember({"plain", "quad", "oct", "tiled"}));
  cmd->add_option("--attn-geometry", o->attn_geometry,
                  "tiled attention: queries per workgroup, queries per thread (4|8), keys per thread (4|8)[, prefetch (0|1)] (default 64 8 8)")
      ->expected(3, 4);
  cmd->callback([o, cmd] {
    if (o->stage.empty() && !o->synthetic) throw Error("give --stage DIR or --synthetic", "ember bench ss-flow");
    o->gpu.device.profiling = true;
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    std::unique_ptr<trellis::TensorSource> source;
    if (o->synthetic) {
      auto c = formats::ss_flow_text_base_config();
      if (o->blocks > 0) c.num_blocks = o->blocks;
      if (o->resolution > 0) c.resolution = o->resolution;
      source = std::make_unique<trellis::MemoryTensors>(trellis::synth_ss_flow_stage(c, 1));
    } else {
      source = trellis::open_ss_flow_stage(o->stage);
    }
    trellis::SsFlowOptions mo = o->mo;
    auto set_dims = [](kernels::QMatmulGeometry& g, const std::vector<uint32_t>& v) {
      if (v.empty()) return;
      g.wg_tokens = v[0];
      g.wg_rows = v[1];
      g.k_step = v[2];
    };
    set_dims(mo.matmul, o->matmul);
    mo.matmul.vec4 = !o->scalar_matmul;
    mo.matmul.prefetch = !o->matmul_no_prefetch;
    if (mo.narrow_matmul) {  // the narrow geometry follows --matmul-scalar / --matmul-no-prefetch
      set_dims(*mo.narrow_matmul, o->narrow_matmul);
      mo.narrow_matmul->vec4 = mo.matmul.vec4;
      mo.narrow_matmul->prefetch = mo.matmul.prefetch;
    }
    if (o->no_quad || o->attention == "plain") mo.attention = kernels::FlashVariant::Plain;
    else if (o->attention == "tiled") mo.attention = kernels::FlashVariant::Tiled;
    else if (o->attention == "quad") mo.attention = kernels::FlashVariant::Quad;
    else if (o->attention == "oct") mo.attention = kernels::FlashVariant::Oct;
    if (!o->attn_geometry.empty())
      mo.attention_tiled = {o->attn_geometry[0], o->attn_geometry[1], o->attn_geometry[2],
                            o->attn_geometry.size() > 3 && o->attn_geometry[3] != 0};
    mo.attention_prefetch = !o->attn_no_prefetch;
    for (const auto& spec : o->matmul_overrides) mo.matmul_overrides.insert(parse_matmul_override(spec, mo.matmul));
    // A tuned candidate for this GPU replaces the defaults; options given here then measure
    // something else than what `ember ss-flow` runs, so they need --no-candidate.
    std::string options_source = "command line";
    {
      std::string used;
      auto tuned = candidate_options(o->synthetic ? "" : o->stage, o->candidate, o->no_candidate, device.adapter(), &used);
      if (used != "defaults") {
        for (const auto* opt : cmd->get_options())
          if (opt->count() > 0 && kTuningOptions.count(opt->get_name()))
            throw Error(opt->get_name() + " given while " + used + " applies to this GPU", "ember bench ss-flow",
                        "add --no-candidate to measure the options given");
        mo = tuned;
        options_source = used;
      }
    }
    const tune::ComputePeaks peaks = tune::measure_compute_peaks(device, kernels);
    auto t_load = std::chrono::steady_clock::now();
    trellis::SsFlowModel model(kernels, *source, mo);
    const auto& c = model.config();
    const int64_t ctx = 77, n = c.in_channels * c.tokens();
    auto cond = trellis::gaussian_noise(100, size_t(ctx * c.cond_channels));
    auto neg = trellis::gaussian_noise(101, size_t(ctx * c.cond_channels));
    model.set_context(cond, neg, ctx);
    device.wait_idle();
    const double load_s = seconds_since(t_load);

    const auto& used = model.options();  // as fitted to the device
    auto dims = [](const kernels::QMatmulGeometry& g) { return std::vector<uint32_t>{g.wg_tokens, g.wg_rows, g.k_step}; };
    nlohmann::json j = {{"device", device.adapter().to_json()}, {"repeats", o->repeats}, {"statistic", "median"},
                        {"options_source", options_source}, {"int8", used.int8}, {"ceilings", peaks.to_json()},
                        {"options", trellis::options_to_json(used)},
                        {"load_s", load_s},
                        {"config", {{"tokens", c.tokens()}, {"channels", c.model_channels}, {"blocks", c.num_blocks},
                                    {"heads", c.num_heads}, {"context", ctx}}},
                        {"attention", attention_name(used.attention)}, {"attention_queries", used.attention_queries},
                        {"attention_keys", used.attention_keys}, {"attention_prefetch", used.attention_prefetch},
                        {"attention_key_splits", used.attention_key_splits}, {"attention_lazy_rescale", used.attention_lazy_rescale},
                        {"attention_fused_pv", used.attention_fused_pv},
                        {"cross_attention_keys", used.cross_attention_keys},
                        {"attention_geometry", {used.attention_tiled.queries, used.attention_tiled.queries_per_thread,
                                                used.attention_tiled.keys_per_thread, used.attention_tiled.prefetch ? 1u : 0u}},
                        {"fuse_gelu", used.fuse_gelu}, {"mlp2_k_splits", used.mlp2_k_splits}, {"square_k_splits", used.square_k_splits},
                        {"matmul_geometry", dims(used.matmul)}, {"matmul_vec4", used.matmul.vec4}, {"matmul_prefetch", used.matmul.prefetch},
                        {"matmul_rows_per_thread", used.matmul.rows_per_thread}, {"mlp0_rows_per_thread", used.mlp0_rows_per_thread},
                        {"mlp2_rows_per_thread", used.mlp2_rows_per_thread},
                        {"narrow_matmul", used.narrow_matmul ? dims(*used.narrow_matmul) : dims(used.matmul)},
                        {"matmul_overrides", o->matmul_overrides}};
    std::string text = "options: " + options_source + (used.int8 ? "; block linears on int8" : "; f32 linears") + "\n";
    {
      char line[160];
      snprintf(line, sizeof line, "ceilings: f32 FMA %.4f TFLOP/s, dot4I8Packed %.4f TOPS\n", peaks.fma_tflops, peaks.dot4_tops);
      text += line;
      const auto& g = used.attention_tiled;
      if (used.attention == kernels::FlashVariant::Tiled)
        snprintf(line, sizeof line, "attention: tiled, %u queries per workgroup, %u x %u per thread%s\n", g.queries,
                 g.queries_per_thread, g.keys_per_thread, g.prefetch ? ", prefetch" : "");
      else
        snprintf(line, sizeof line, "attention: %s, %u queries per workgroup, %u keys per tile, batch-1 key splits %u\n",
                 attention_name(used.attention), used.attention_queries, used.attention_keys, used.attention_key_splits);
      text += line;
    }
    for (int batch : {1, 2}) {
      if (batch == 1 && o->batch2_only) continue;
      auto x = trellis::gaussian_noise(7, size_t(batch * n));
      std::vector<double> t(size_t(batch), 0.7);
      model.forward(x, t);  // warm-up: compiles pipelines
      std::vector<double> wall;
      for (int r = 0; r < o->repeats; r++) {
        auto s = std::chrono::steady_clock::now();
        model.forward(x, t);
        wall.push_back(seconds_since(s));
      }
      gpu::Profiler prof(device, 1024);
      std::vector<double> gpu_ms;
      for (int r = 0; r < std::max(1, o->repeats / 2); r++) {
        prof.clear_summary();
        model.forward(x, t, &prof);
        double total = 0;
        for (const auto& reg : prof.collect()) total += reg.ms();
        gpu_ms.push_back(total);
      }
      const double flops = model.flops(batch), ws = median(wall);
      const std::string key = "forward_batch" + std::to_string(batch);
      j[key] = {{"wall_ms", 1e3 * ws}, {"gpu_kernels_ms", median(gpu_ms)}, {"gflop", flops / 1e9},
                {"tflops_wall", flops / ws / 1e12}, {"kernels", prof.to_json()}};
      char line[256];
      snprintf(line, sizeof line, "forward batch %d: %.2f ms wall, %.2f ms summed kernel time (profiled), %.1f GFLOP, %.2f TFLOP/s\n",
               batch, 1e3 * ws, median(gpu_ms), flops / 1e9, flops / ws / 1e12);
      nlohmann::json rates;
      text += line + prof.table() + rate_table(model, batch, prof, peaks, rates) + "\n";
      j[key]["rates"] = rates;
    }
    if (!o->no_sample) {
      trellis::FlowSampler sampler(model);
      auto noise = trellis::gaussian_noise(0, size_t(n));
      const auto ts = trellis::flow_schedule(o->sampler.steps, o->sampler.rescale_t);
      double flops = 0;
      for (int i = 0; i < o->sampler.steps; i++) flops += model.flops(trellis::guided_at(ts[size_t(i)], o->sampler) ? 2 : 1);
      sampler.sample(noise, o->sampler);  // warm-up
      std::vector<double> wall, step_ms[2];  // step times at batch 1 and 2, over all repeats
      auto record_step = [&](const trellis::StepReport& r) { step_ms[r.guided ? 1 : 0].push_back(1e3 * r.seconds); };
      for (int r = 0; r < std::max(1, o->repeats / 2); r++) {
        auto s = std::chrono::steady_clock::now();
        sampler.sample(noise, o->sampler, record_step);
        wall.push_back(seconds_since(s));
      }
      const double ws = median(wall);
      j["sampling"] = {{"steps", o->sampler.steps}, {"wall_s", ws}, {"tflop", flops / 1e12}, {"tflops", flops / ws / 1e12},
                       {"step_ms_batch1", median(step_ms[0])}, {"step_ms_batch2", median(step_ms[1])}};
      char line[256];
      snprintf(line, sizeof line,
               "sampling, %d steps (cfg %.1f in [%.2f, %.2f]): %.3f s wall, %.1f TFLOP, %.2f TFLOP/s; median step %.2f ms at "
               "batch 1, %.2f ms at batch 2\n",
               o->sampler.steps, o->sampler.cfg_strength, o->sampler.cfg_lo, o->sampler.cfg_hi, ws, flops / 1e12, flops / ws / 1e12,
               median(step_ms[0]), median(step_ms[1]));
      text += line;
      if (o->batch_samples > 0) {
        // One timed run (the pipelines are compiled by now): B prompts, B noises, the shared negative context.
        const size_t B = size_t(o->batch_samples);
        const auto noise_b = trellis::gaussian_noise(0, B * size_t(n));
        const auto cond_b = trellis::gaussian_noise(102, B * size_t(ctx * c.cond_channels));
        std::vector<double> batch_step_ms[2];
        auto s = std::chrono::steady_clock::now();
        sampler.sample_batch(noise_b, cond_b, neg, ctx, o->sampler,
                             [&](const trellis::StepReport& r) { batch_step_ms[r.guided ? 1 : 0].push_back(1e3 * r.seconds); });
        const double wb = seconds_since(s);
        model.set_context(cond, neg, ctx);  // back to the context of the runs above
        j["sampling_batch"] = {{"samples", B}, {"steps", o->sampler.steps}, {"wall_s", wb}, {"wall_s_per_sample", wb / double(B)},
                               {"tflops", double(B) * flops / wb / 1e12}, {"per_sample_vs_batch1", wb / double(B) / ws},
                               {"step_ms_batch1", median(batch_step_ms[0])}, {"step_ms_batch2", median(batch_step_ms[1])}};
        snprintf(line, sizeof line,
                 "sampling a batch of %zu latents (one after another): %.3f s wall, %.3f s per latent (%.3fx the single run), "
                 "%.2f TFLOP/s\n",
                 B, wb, wb / double(B), wb / double(B) / ws, double(B) * flops / wb / 1e12);
        text += line;
      }
    }
    if (o->json)
      std::printf("%s\n", j.dump(2).c_str());
    else
      std::printf("device: %s\n%s", device.adapter().name().c_str(), text.c_str());
  });
}

}  // namespace ember::cli
