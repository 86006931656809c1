// `ember tune`: autotunes a pack's candidate for this GPU and writes runtime.json; with --stage, the
// ss-flow stage's candidate for this GPU (trellis/ss_flow_tune.h) into the stage's candidate file.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "common/error.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/ss_flow_tune.h"
#include "tune/tuner.h"

namespace ember::cli {

namespace {

template <typename Opts>
void tune_stage(Opts& o) {
  namespace fs = std::filesystem;
  auto source = trellis::open_ss_flow_stage(o.stage);
  const fs::path out = o.out.empty() ? fs::path(o.stage) / trellis::kSsFlowCandidateFile : fs::path(o.out);
  gpu::Device device = gpu::Device::open(o.gpu.device);
  gpu::KernelCache kernels(device);
  // A file in the way that is not a candidate file fails here, before the search.
  if (fs::exists(out)) trellis::load_ss_flow_candidate_file(out, device.adapter());
  trellis::SsFlowTuneOptions t;
  t.budget_s = o.tune.budget_s;
  t.repeats = o.tune.repeats;
  t.max_choices = o.max_choices;
  if (!o.quiet) t.progress = [](const std::string& line) { std::fprintf(stderr, "tune: %s\n", line.c_str()); };
  trellis::SsFlowModel model(kernels, *source);
  trellis::SsFlowTuneResult r = trellis::tune_ss_flow(model, t);
  trellis::SsFlowCandidate c{r.best, r.to_json()};
  c.tuned.erase("rows");
  c.tuned.erase("best");
  c.tuned["budget_s"] = t.budget_s;
  trellis::save_ss_flow_candidate(out, device.adapter(), c);
  if (o.json) {
    nlohmann::json j = r.to_json();
    j["out"] = out.string();
    j["device_key"] = trellis::candidate_device_key(device.adapter());
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%swrote %s (entry \"%s\")\n", r.table().c_str(), out.string().c_str(),
                trellis::candidate_device_key(device.adapter()).c_str());
  }
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tune",
      "search the pack's kernel choices on this GPU (matvec variant x geometry per matrix shape, flash-decoding blocks per "
      "position, fused-MLP slices/workgroup) with GPU timestamps on the pack's weights, reject any choice whose output differs "
      "from the reference, and write runtime.json");
  struct Opts {
    std::string model, stage, out;
    GpuOptions gpu;
    tune::TuneOptions tune;
    bool json = false, quiet = false;
    int max_choices = 0;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "model directory (runtime.json, weights.bin)");
  cmd->add_option("--stage", o->stage,
                  "instead of --model: a sparseStructureFlow stage directory; searches its matmul path (f32 or int8), tiles, "
                  "split-K and attention variant/geometry, checks each against the f32 reference forward, and writes this GPU's "
                  "entry of DIR/" + std::string(trellis::kSsFlowCandidateFile));
  cmd->add_option("--budget", o->tune.budget_s, "seconds for the whole search; stops early and keeps the best so far")->capture_default_str();
  cmd->add_option("--out", o->out,
                  "runtime.json to write (default: MODEL/runtime.json, the old one kept as runtime.json.bak); with --stage the "
                  "candidate file (default: STAGE/" + std::string(trellis::kSsFlowCandidateFile) + ")");
  cmd->add_flag("--allow-mlp-pair", o->tune.allow_mlp_pair,
                "let the tuner switch the fused MLP (mlpPair) on or off by the time of whole decode steps (the model built both "
                "ways, 128 positions). mlpPair decides which copy of each down matrix "
                "is the model's weight (down.kquant when on, down.quant when off): the two copies are quantized separately, so "
                "switching changes the model's logits slightly. Without this flag the input's mlpPair is kept (its slices and "
                "workgroup are tuned when it is on)");
  cmd->add_option("--repeats", o->tune.repeats, "timed runs per configuration after one warm-up (median)")->capture_default_str();
  cmd->add_option("--max-choices", o->max_choices, "with --stage: stop after this many choices tried, the defaults included (0: the budget alone)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "print the search summary as JSON on stdout (progress stays on stderr)");
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr");
  o->gpu.add_to(*cmd);
  cmd->callback([o] {
    namespace fs = std::filesystem;
    if (o->tune.budget_s <= 0) throw Error("--budget must be positive", "--budget", "give seconds, e.g. --budget 120");
    if (o->model.empty() == o->stage.empty()) throw Error("give exactly one of --model DIR and --stage DIR", "ember tune");
    if (!o->stage.empty()) return tune_stage(*o);
    auto pack = formats::LlmPack::open(o->model);
    o->gpu.device.profiling = true;  // exact timestamps
    gpu::Device device = gpu::Device::open(o->gpu.device);
    gpu::KernelCache kernels(device);
    if (!o->quiet) o->tune.progress = [](const std::string& line) { std::fprintf(stderr, "tune: %s\n", line.c_str()); };
    tune::TuneResult r = tune::tune_llm(pack, device, kernels, o->tune);
    const fs::path out = o->out.empty() ? fs::path(o->model) / "runtime.json" : fs::path(o->out);
    tune::write_runtime_json(r.file, out, /*backup=*/true);  // an overwritten runtime.json is kept as .bak
    if (o->json) {
      nlohmann::json j = r.to_json();
      j["out"] = out.string();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%swrote %s\n", r.table().c_str(), out.string().c_str());
    }
  });
}

}  // namespace ember::cli
