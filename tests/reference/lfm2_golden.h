// A golden directory: what one implementation computed for a fixed id sequence, module by module
// (named by transformers' module path, reference/lfm2_reference.h's Lfm2Tap), for another to be
// compared with. tools/golden/make_lfm2_goldens.py writes them from transformers' own forward;
// write_golden_dir writes one from ember's CPU reference (the harness's self-check).
//
// Layout: index.json {"format": "ember-lfm2-golden", "version": 1, "producer": ..., "ids": FILE,
// "modules": [{"name": PATH, "file": FILE}, ...], optional "generate": {"ids": FILE, "logits":
// FILE}}, with every FILE a .npy in the directory: ids int32/int64 [T], a module f32 [T, width]
// (row t: position t), generate's ids [N] and logits f32 [N, vocab] (the N greedy steps after the
// sequence).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/lfm2_reference.h"

namespace ember::reference {

struct GoldenModule {
  std::string name;
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // [rows][cols]
  std::span<const float> row(int64_t t) const { return std::span<const float>(values).subspan(size_t(t * cols), size_t(cols)); }
};

struct GoldenDir {
  std::string producer;
  std::vector<uint32_t> ids;
  std::vector<GoldenModule> modules;  // in the order the forward computes them
  std::vector<uint32_t> generate_ids;
  std::optional<GoldenModule> generate_logits;
  const GoldenModule* find(const std::string& name) const;
};

// Reads and checks a golden directory (every file present, shapes consistent with the ids);
// throws ember::Error naming the file and what is wrong.
GoldenDir read_golden_dir(const std::filesystem::path& dir);
// Writes one atomically (the directory must not exist).
void write_golden_dir(const std::filesystem::path& dir, const GoldenDir& golden);

// Every module of the CPU reference over `ids` from position 0, then `generate` greedy steps
// (their ids and logits): a golden of ember's own reading of the model.
GoldenDir reference_golden(const Lfm2Weights& weights, const std::vector<uint32_t>& ids, uint32_t generate, const std::string& producer);

// ||got - want|| / ||want|| over one row (||got - want|| where want is zero).
double rel_l2(std::span<const float> got, std::span<const float> want);

struct ModuleCheck {
  std::string name;
  double worst = 0;        // the largest rel L2 over the positions compared
  int64_t worst_at = -1;   // at which position
  int64_t compared = 0;    // positions compared
  std::string problem;     // non-empty: not comparable (missing, other width)
  bool passed(double tolerance) const { return problem.empty() && compared > 0 && worst <= tolerance; }
};

// Compares `ours` (module name -> [positions][width] rows, any subset of the golden's modules,
// from position 0) with the golden module by module.
std::vector<ModuleCheck> compare_modules(const GoldenDir& golden, const std::map<std::string, GoldenModule>& ours);
// One module's rows against the golden's rows of `want` (from position `first`).
ModuleCheck compare_rows(const std::string& name, const GoldenModule& got, const GoldenModule& want, int64_t first = 0);
// A table of the checks, one line each, with PASS / FAIL against `tolerance`.
std::string check_table(const std::vector<ModuleCheck>& checks, double tolerance);

}  // namespace ember::reference
