// `ember text-to-3d`: a prompt -> a 3D asset (GLB mesh; optionally PLY points and a PNG preview),
// through the text encoder, ss-flow and ss-decoder stages of a pipeline folder. Progress per stage
// and per sampler step on stderr; per-stage and total time at the end. Every output path is checked
// before any work, and each file is written atomically.
#include <chrono>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/output_files.h"
#include "common/error.h"
#include "trellis/asset_export.h"
#include "trellis/text_to_3d.h"

namespace ember::cli {
namespace {

// With several samples, sample s's files get "-s" before the extension: chair.glb -> chair-0.glb.
std::string sample_path(const std::string& path, int s, int samples) {
  if (path.empty() || samples == 1) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + std::to_string(s) + p.extension().string())).string();
}

}  // namespace

void add_text_to_3d_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("text-to-3d", "TRELLIS text-to-3D: prompt -> occupancy -> GLB mesh (+ PLY points, PNG preview)");
  struct Opts {
    GpuOptions gpu;
    std::string prompt, negative, stages, out, ply, preview, interval;
    uint64_t seed = 0;
    int samples = 1, steps = 0, preview_size = 256;
    double cfg = -1, rescale_t = -1;
  };
  auto o = std::make_shared<Opts>();
  o->gpu.add_to(*cmd);
  cmd->add_option("--prompt", o->prompt, "what to make")->required();
  cmd->add_option("--negative-prompt", o->negative, "the unconditional prompt (default \"\", as TRELLIS)");
  cmd->add_option("--stages", o->stages, "pipeline folder: pipeline.json + the text encoder, ss-flow and ss-decoder stages")->required();
  cmd->add_option("--seed", o->seed, "noise seed (sample s uses seed + s)")->capture_default_str();
  cmd->add_option("--samples", o->samples, "assets to make from the prompt")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--steps", o->steps, "sampler steps (default: pipeline.json's, 25 in the released pipelines)");
  cmd->add_option("--cfg", o->cfg, "guidance strength (default: pipeline.json's, 7.5)");
  cmd->add_option("--cfg-interval", o->interval, "guidance where LO <= t <= HI, as LO,HI (default: pipeline.json's, 0.5,1.0)");
  cmd->add_option("--rescale-t", o->rescale_t, "time rescaling (default: pipeline.json's, 3.0)");
  cmd->add_option("--out", o->out, "output mesh .glb (glTF 2.0 binary, y up, in the unit box)")->required();
  cmd->add_option("--ply", o->ply, "also write the occupied voxel centres as a .ply point cloud");
  cmd->add_option("--preview", o->preview, "also write a .png of the shape from four sides (rendered on the GPU)");
  cmd->add_option("--preview-size", o->preview_size, "pixels per preview view")->check(CLI::Range(16, 2048))->capture_default_str();
  cmd->callback([o] {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, std::string>> outs;
    for (int s = 0; s < o->samples; s++) {
      outs.push_back({sample_path(o->out, s, o->samples), "--out"});
      outs.push_back({sample_path(o->ply, s, o->samples), "--ply"});
      outs.push_back({sample_path(o->preview, s, o->samples), "--preview"});
    }
    check_new_outputs(outs);
    trellis::PipelineConfig config = trellis::read_pipeline_config(o->stages);
    trellis::TextTo3DRequest req{o->prompt, o->negative, o->seed, o->samples, config.sampler};
    if (o->steps) req.sampler.steps = o->steps;
    if (o->cfg >= 0) req.sampler.cfg_strength = o->cfg;
    if (o->rescale_t >= 0) req.sampler.rescale_t = o->rescale_t;
    if (!o->interval.empty()) {
      std::istringstream in(o->interval);
      char comma = 0;
      if (!(in >> req.sampler.cfg_lo >> comma >> req.sampler.cfg_hi) || comma != ',' || !in.eof())
        throw Error("'" + o->interval + "' is not LO,HI", "--cfg-interval", "e.g. --cfg-interval 0.5,1.0");
    }
    req.sampler.validate();
    std::fprintf(stderr, "text-to-3d: opening %s\n", o->stages.c_str());
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    trellis::TextTo3DPipeline pipeline(kernels, config);
    if (!pipeline.random_stages().empty()) {
      std::string list;
      for (const auto& s : pipeline.random_stages()) list += (list.empty() ? "" : ", ") + s;
      std::fprintf(stderr, "text-to-3d: note: random weights in %s (ember synth): the shape is noise, not the prompt\n", list.c_str());
    }
    trellis::TextTo3DEvents ev;
    ev.stage = [&](const std::string& stage, int s) {
      if (o->samples > 1 && stage != "text encoder")
        std::fprintf(stderr, "text-to-3d: sample %d/%d: %s\n", s + 1, o->samples, stage.c_str());
      else
        std::fprintf(stderr, "text-to-3d: %s\n", stage.c_str());
    };
    ev.step = [&](const trellis::StepReport& r, int) {
      const int width = 30, done = (r.step + 1) * width / r.steps;
      std::fprintf(stderr, "\r  [%s%s] step %2d/%d  t=%.3f %s %7.1f ms", std::string(size_t(done), '#').c_str(),
                   std::string(size_t(width - done), '.').c_str(), r.step + 1, r.steps, r.t, r.guided ? "cfg" : "   ", 1e3 * r.seconds);
      if (r.step + 1 == r.steps) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
    auto samples = pipeline.run(req, ev);
    const auto t_assets = std::chrono::steady_clock::now();
    for (int s = 0; s < o->samples; s++) {
      const auto& smp = samples[size_t(s)];
      std::fprintf(stderr, "text-to-3d: assets%s: %zu occupied voxels of %u^3\n",
                   o->samples > 1 ? (" " + std::to_string(s + 1)).c_str() : "", smp.occupied, smp.extent[0]);
      const trellis::AssetPaths paths{sample_path(o->out, s, o->samples), sample_path(o->ply, s, o->samples),
                                      sample_path(o->preview, s, o->samples)};
      auto rep = trellis::write_assets(kernels, smp.logits, smp.extent, paths, uint32_t(o->preview_size));
      std::printf("wrote %s (%zu vertices, %zu triangles)", paths.glb.c_str(), rep.vertices, rep.triangles);
      if (!paths.ply.empty()) std::printf(", %s (%zu points)", paths.ply.c_str(), rep.points);
      if (!paths.preview.empty()) std::printf(", %s", paths.preview.c_str());
      std::printf("\n");
    }
    const double assets_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_assets).count();
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& t = pipeline.times();
    std::fprintf(stderr,
                 "text-to-3d: times: open stages %.2f s (incl. shader compilation), text encoder %.3f s, ss-flow %.3f s "
                 "(%d steps x %d sample%s), ss-decoder %.3f s, assets %.3f s; total %.2f s\n",
                 t.open_s, t.text_s, t.flow_s, req.sampler.steps, o->samples, o->samples > 1 ? "s" : "", t.decode_s, assets_s, total_s);
  });
}

}  // namespace ember::cli
