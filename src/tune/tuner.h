// `ember tune`: searches the candidate's space on this adapter (matvec variant x geometry per
// matrix shape, norm fusion, flash-decoding blocks per position range, the fused MLP's slices and
// workgroup, the one-dispatch out projection + MLP, then the choices only whole decode steps rank,
// then the prefill matmul geometry per shape)
// on the pack's real weights, within a time budget, and turns the winners into a runtime.json
// in the seed's format (candidate, knee, flashOptima, dequantVariant, expectedSubgroupSize).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_pack.h"
#include "tune/flash_search.h"
#include "tune/matmul_search.h"
#include "tune/matvec_search.h"
#include "tune/mlp_search.h"
#include "tune/norm_search.h"
#include "tune/residual_mlp_search.h"

namespace ember::tune {

struct TuneOptions {
  double budget_s = 120;   // whole search, weight upload included; stops early, keeps the best so far
  // mlpPair decides which down copy is the model (docs/formats.md "One model, one set of weights"):
  // without this flag the input candidate's mlpPair is kept (its slices/workgroup tuned when on);
  // with it, the whole decode step is timed with the fused MLP and with the unfused path as tuned,
  // and the faster one is written.
  bool allow_mlp_pair = false;
  int repeats = 5;         // timed runs per configuration after one warm-up (median)
  int64_t flush_bytes = -1;  // cache flush between runs; -1: KernelTimer::default_flush_bytes
  std::function<void(const std::string&)> progress;  // one line per step (stderr in the CLI)
};

struct TuneResult {
  formats::RuntimeFile file;  // the tuned runtime.json
  std::string adapter;
  uint32_t subgroup_size = 0;
  std::vector<MatvecShapeResult> matvec;
  std::vector<FlashPoint> flash;
  FlashDirect flash_direct;  // the one-block kernel's width (candidate extra flashDirectWorkgroup)
  std::optional<MlpSearchResult> mlp;
  std::optional<NormFusionResult> norm;  // normFuse: norms fused into the matvecs vs separate
  std::optional<ResidualMlpSearchResult> residual_mlp;  // out projection + MLP as one dispatch (residualMlpWorkgroups)
  bool mlp_pair = false;
  // With --allow-mlp-pair: the median GPU decode step at `context` positions with the fused MLP
  // and with the unfused path (and the one-dispatch out projection + MLP where it was found).
  struct MlpPairCheck {
    uint32_t context = 0;
    double fused_step_us = 0, unfused_step_us = 0;
  };
  std::optional<MlpPairCheck> mlp_pair_check;
  // The decode graphs timed over whole decode steps, one round per choice (the one-dispatch
  // layer's best grids [or the fused MLP with --allow-mlp-pair], the head's best geometries, the
  // one-block attention's best widths): median GPU step of each.
  struct StepCheck {
    uint32_t context = 0;
    std::vector<std::pair<std::string, double>> tried;  // graph, step us
    std::vector<std::string> chosen;  // each round's fastest
  };
  std::optional<StepCheck> step_check;
  std::string mlp_note;       // why the MLP was (not) searched
  std::vector<MatmulShapeResult> prefill;  // prefill matmul geometry per shape (candidate prefillMatmul)
  std::vector<std::string> unavailable;  // options not searchable here (f16 paths)
  double seconds = 0, budget_s = 0;
  // The timer's clock probe (kernel_timer.h): a warm flush, measurements repeated, slow ones kept.
  double warm_flush_us = 0;
  int cold_retries = 0, cold_kept = 0;
  bool budget_hit = false;
  nlohmann::json to_json() const;   // summary (everything measured; not runtime.json)
  std::string table() const;        // best vs default per shape, speedup
};

TuneResult tune_llm(const formats::LlmPack& pack, const gpu::Device& device, gpu::KernelCache& kernels, const TuneOptions& options);

// Writes `file` as runtime.json to `out` atomically; an existing `out` is first copied to
// `out`.bak when `backup`.
void write_runtime_json(const formats::RuntimeFile& file, const std::filesystem::path& out, bool backup);

}  // namespace ember::tune
