// `ember bench ss-flow`: one forward at batch 1 and 2 and a full default sampling run of the
// TRELLIS sparse-structure flow stage; medians of repeats after a warm-up, per-kernel GPU time.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "gpu/profiler.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_stage.h"

namespace ember::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
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
  struct Opts {
    GpuOptions gpu;
    std::string stage;
    bool synthetic = false, json = false, no_sample = false, fuse_gelu = false, batch2_only = false, no_quad = false, scalar_matmul = false, matmul_no_prefetch = false;
    int repeats = 5, blocks = 0, resolution = 0;
    std::vector<uint32_t> matmul{16, 16, 16}, narrow_matmul{16, 8, 16};
    uint32_t attn_queries = 128, attn_keys = 32;
    bool attn_no_prefetch = false;
    std::string attention = "oct";
    std::vector<uint32_t> attn_geometry{64, 8, 8};
    uint32_t mlp2_splits = 2, matmul_rows = 8, mlp0_rows = 16;
    uint32_t square_splits = 1;
    trellis::SamplerOptions sampler;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--stage", o->stage, "stage directory (a packed sparseStructureFlow stage)");
  cmd->add_flag("--synthetic", o->synthetic, "random weights of the seed shape instead of a stage");
  cmd->add_option("--blocks", o->blocks, "with --synthetic: number of blocks (default: the seed's 12)");
  cmd->add_option("--resolution", o->resolution, "with --synthetic: grid side (default: the seed's 16)");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_option("--repeats", o->repeats, "timed repeats after one warm-up");
  cmd->add_flag("--no-sample", o->no_sample, "skip the full sampling run");
  cmd->add_option("--steps", o->sampler.steps, "sampling steps");
  cmd->add_option("--matmul", o->matmul, "qmatmul geometry: threads along tokens, along rows, K step")->expected(3);
  cmd->add_option("--mlp2-splits", o->mlp2_splits, "split-K chunks for mlp.2 (K = 3072; 1 = none; default 2)")->check(CLI::Range(1, 48));
  cmd->add_option("--square-splits", o->square_splits, "split-K chunks for the 768 x 768 matmuls (self to_out, cross to_q/to_out; 1 = none; default 1)")
      ->check(CLI::Range(1, 12));
  cmd->add_flag("--fuse-gelu", o->fuse_gelu, "GELU in the mlp.0 matmul epilogue");
  cmd->add_option("--attn-keys", o->attn_keys, "keys per flash-attention tile (quad and oct variants)");
  cmd->add_flag("--attn-no-prefetch", o->attn_no_prefetch, "quad and oct flash attention: load each K/V tile only when it is used (no register prefetch)");
  cmd->add_option("--narrow-matmul", o->narrow_matmul,
                  "geometry of the matmuls with 768 output rows (mlp.2, the 768 x 768 ones): threads along tokens, along rows, K step (default 16 8 16)")
      ->expected(3);
  cmd->add_option("--mlp0-rows", o->mlp0_rows, "mlp.0 outputs per thread along rows (8 or 16; default 16)")->check(CLI::IsMember({8, 16}));
  cmd->add_option("--matmul-rows", o->matmul_rows, "qmatmul outputs per thread along rows (8 or 16)")->check(CLI::IsMember({8, 16}));
  cmd->add_flag("--matmul-scalar", o->scalar_matmul, "qmatmul with scalar workgroup-memory reads (default: vec4)");
  cmd->add_flag("--matmul-no-prefetch", o->matmul_no_prefetch, "qmatmul: load each K step only when it is used (no register prefetch)");
  cmd->add_flag("--no-quad", o->no_quad, "plain flash attention instead of the oct variant");
  cmd->add_flag("--batch2-only", o->batch2_only, "forward at batch 2 only (for sweeps)");
  cmd->add_option("--attn-queries", o->attn_queries, "queries per flash-attention workgroup (plain, quad, oct; the quad and oct self attention runs half of them at batch 1)");
  cmd->add_option("--attention", o->attention, "flash attention variant: plain, quad (4 queries per lane quad), oct (8 per lane octet; the default) or tiled (FA2-style register tiles)")
      ->check(CLI::IsMember({"plain", "quad", "oct", "tiled"}));
  cmd->add_option("--attn-geometry", o->attn_geometry,
                  "tiled attention: queries per workgroup, queries per thread (4|8), keys per thread (4|8)[, prefetch (0|1)]")
      ->expected(3, 4);
  cmd->callback([o] {
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
    trellis::SsFlowOptions mo;
    mo.matmul = {o->matmul[0], o->matmul[1], o->matmul[2], !o->scalar_matmul};
    mo.matmul.prefetch = !o->matmul_no_prefetch;
    mo.matmul.rows_per_thread = o->matmul_rows;
    mo.mlp0_rows_per_thread = o->mlp0_rows;
    mo.narrow_matmul = mo.matmul;
    mo.narrow_matmul->wg_tokens = o->narrow_matmul[0];
    mo.narrow_matmul->wg_rows = o->narrow_matmul[1];
    mo.narrow_matmul->k_step = o->narrow_matmul[2];
    mo.narrow_matmul->rows_per_thread = 8;
    mo.attention_queries = o->attn_queries;
    mo.fuse_gelu = o->fuse_gelu;
    mo.attention = o->no_quad            ? kernels::FlashVariant::Plain
                   : o->attention == "plain" ? kernels::FlashVariant::Plain
                   : o->attention == "tiled" ? kernels::FlashVariant::Tiled
                   : o->attention == "oct"   ? kernels::FlashVariant::Oct
                                             : kernels::FlashVariant::Quad;
    mo.mlp2_k_splits = o->mlp2_splits;
    mo.square_k_splits = o->square_splits;
    mo.attention_tiled = {o->attn_geometry[0], o->attn_geometry[1], o->attn_geometry[2],
                          o->attn_geometry.size() > 3 && o->attn_geometry[3] != 0};
    mo.attention_keys = o->attn_keys;
    mo.attention_prefetch = !o->attn_no_prefetch;
    auto t_load = std::chrono::steady_clock::now();
    trellis::SsFlowModel model(kernels, *source, mo);
    const auto& c = model.config();
    const int64_t ctx = 77, n = c.in_channels * c.tokens();
    auto cond = trellis::gaussian_noise(100, size_t(ctx * c.cond_channels));
    auto neg = trellis::gaussian_noise(101, size_t(ctx * c.cond_channels));
    model.set_context(cond, neg, ctx);
    device.wait_idle();
    const double load_s = seconds_since(t_load);

    nlohmann::json j = {{"device", device.adapter().to_json()}, {"repeats", o->repeats}, {"statistic", "median"},
                        {"load_s", load_s},
                        {"config", {{"tokens", c.tokens()}, {"channels", c.model_channels}, {"blocks", c.num_blocks},
                                    {"heads", c.num_heads}, {"context", ctx}}},
                        {"matmul_geometry", o->matmul}, {"attention_queries", o->attn_queries},
                        {"attention", attention_name(model.options().attention)}, {"attention_keys", o->attn_keys}, {"attention_prefetch", !o->attn_no_prefetch},
                        {"attention_geometry", {model.options().attention_tiled.queries, model.options().attention_tiled.queries_per_thread,
                                                model.options().attention_tiled.keys_per_thread,
                                                model.options().attention_tiled.prefetch ? 1u : 0u}}, {"fuse_gelu", o->fuse_gelu}, {"mlp2_k_splits", o->mlp2_splits}, {"square_k_splits", o->square_splits}, {"matmul_vec4", !o->scalar_matmul}, {"matmul_prefetch", !o->matmul_no_prefetch}, {"matmul_rows_per_thread", o->matmul_rows}, {"mlp0_rows_per_thread", o->mlp0_rows}, {"narrow_matmul", o->narrow_matmul}};
    std::string text;
    {
      const auto& mo_used = model.options();
      char line[160];
      const auto& g = mo_used.attention_tiled;
      if (mo_used.attention == kernels::FlashVariant::Tiled)
        snprintf(line, sizeof line, "attention: tiled, %u queries per workgroup, %u x %u per thread%s\n", g.queries,
                 g.queries_per_thread, g.keys_per_thread, g.prefetch ? ", prefetch" : "");
      else
        snprintf(line, sizeof line, "attention: %s, %u queries per workgroup, %u keys per tile\n", attention_name(mo_used.attention),
                 o->attn_queries, o->attn_keys);
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
      text += line + prof.table() + "\n";
    }
    if (!o->no_sample) {
      trellis::FlowSampler sampler(model);
      auto noise = trellis::gaussian_noise(0, size_t(n));
      const auto ts = trellis::flow_schedule(o->sampler.steps, o->sampler.rescale_t);
      double flops = 0;
      for (int i = 0; i < o->sampler.steps; i++) flops += model.flops(trellis::guided_at(ts[size_t(i)], o->sampler) ? 2 : 1);
      sampler.sample(noise, o->sampler);  // warm-up
      std::vector<double> wall;
      for (int r = 0; r < std::max(1, o->repeats / 2); r++) {
        auto s = std::chrono::steady_clock::now();
        sampler.sample(noise, o->sampler);
        wall.push_back(seconds_since(s));
      }
      const double ws = median(wall);
      j["sampling"] = {{"steps", o->sampler.steps}, {"wall_s", ws}, {"tflop", flops / 1e12}, {"tflops", flops / ws / 1e12}};
      char line[256];
      snprintf(line, sizeof line, "sampling, %d steps (cfg %.1f in [%.2f, %.2f]): %.3f s wall, %.1f TFLOP, %.2f TFLOP/s\n",
               o->sampler.steps, o->sampler.cfg_strength, o->sampler.cfg_lo, o->sampler.cfg_hi, ws, flops / 1e12, flops / ws / 1e12);
      text += line;
    }
    if (o->json)
      std::printf("%s\n", j.dump(2).c_str());
    else
      std::printf("device: %s\n%s", device.adapter().name().c_str(), text.c_str());
  });
}

}  // namespace ember::cli
