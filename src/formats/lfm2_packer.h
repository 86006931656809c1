// `ember pack lfm2`: a Hugging Face LFM2 checkpoint (config.json, *.safetensors in F32/F16/BF16,
// tokenizer.json) becomes an LLM runtime pack (runtime.json, weights.bin, tokenizer.json) with
// the section layout of llm_layout.h, 4-bit weights from q4_quantize.h and f32 rope tables.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "common/output_guard.h"
#include "formats/llm_layout.h"
#include "formats/llm_runtime.h"

namespace ember::formats {

struct Lfm2PackOptions {
  int64_t max_positions_cap = 2560;  // rope.cos_ext/sin_ext length: min(config, this)
  int64_t max_total_positions = 2112;  // KV capacity (capped to maxPositions)
  std::ostream* log = nullptr;         // progress and per-matrix error lines
};

struct Lfm2PackReport {
  struct MatrixError {
    std::string section;   // "L3.conv.in_proj", "L0.mlp.down.kquant", "head"
    int64_t rows = 0, cols = 0;
    std::string encoding;  // "q4 symmetric", "q4 asymmetric", "q4 k-major"
    double rel_l2 = 0;     // ||dequantized - original|| / ||original||
  };
  std::vector<MatrixError> matrices;
  LlmShape shape;
  LlmLayout layout;
  double seconds = 0;
};

// The runtime section and default candidate the packer writes for a shape (no sections).
RuntimeFile default_runtime_file(const LlmShape& shape, int64_t max_positions, int64_t max_total_positions);

// f32 [positions][headDim/2] rope tables as transformers computes them in f32:
// inv_freq_i = 1 / theta^(2i/headDim), angle = pos * inv_freq_i.
void rope_tables(double theta, int64_t head_dim, int64_t positions, std::vector<float>& cos, std::vector<float>& sin);

// An LLM runtime pack directory as an output: --force may replace a directory holding only a
// pack's files (runtime.json, weights.bin, tokenizer files, tune's runtime.json.bak).
OutputKind llm_pack_output();

// Checks the output (output_guard.h; --from is an input) before anything else, then reads,
// checks (every problem at once; a non-finite weight names its tensor and index), quantizes and
// writes the pack atomically.
Lfm2PackReport pack_lfm2(const std::filesystem::path& hf_dir, const OutputTarget& out,
                         const Lfm2PackOptions& opts = {});

}  // namespace ember::formats
