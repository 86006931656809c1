// The byte layout of an LLM pack's weights.bin, computed from the model shape alone: which
// sections exist, in which order, at which offsets and with how many bytes (docs/formats.md,
// "Section order"). The packer writes exactly this table; the validator demands it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/llm_runtime.h"

namespace ember::formats {

constexpr uint64_t kSectionAlign = 256;       // every section offset (binding offsets on the GPU)
constexpr int64_t kRopeShortPositions = 1024;  // rope.cos/sin hold this many positions (or fewer)

enum class SectionKind {
  Quant,       // 4-bit weights [rows][cols], 32-blocks along cols
  Scales,      // f32 [rows][cols/32]
  ZeroPoints,  // 4-bit [rows][cols/32] (head/embed only)
  KQuant,      // down matrix k-major: 4-bit [ffn][hidden], 32-blocks along hidden
  KScales,     // f32 [ffn][hidden/32]
  F32,         // norms, conv taps, q/k norms, rope tables
};
const char* section_kind_name(SectionKind k);  // "quant", "scales", ...

// A 4-bit matrix of the model, as the engine multiplies it: y[rows] = W[rows][cols] x[cols].
struct MatrixSpec {
  std::string name;       // section prefix: "L3.conv.in_proj", "head", ...
  std::string shape_key;  // candidate/knee key: conv_in_proj, conv_out_proj, attn_qkv, attn_o_proj, mlp_gate_up, mlp_down, head
  int64_t rows = 0, cols = 0;
  int layer = -1;             // -1 for head
  bool asymmetric = false;    // zero points (head/embed)
};

struct SectionSpec {
  std::string name;
  uint64_t offset = 0, bytes = 0;
  SectionKind kind = SectionKind::F32;
  std::string alias_of;       // non-empty: same bytes as that section (embed.* = head.*)
  int64_t rows = 0, cols = 0;  // matrix dims for quant kinds (kquant: [ffn][hidden]); f32: [rows][cols]
};

struct LlmLayout {
  std::vector<SectionSpec> sections;  // in file order (aliases listed where the seed lists them)
  uint64_t weight_bytes = 0;          // end of the last section, rounded up to kSectionAlign
  const SectionSpec* find(const std::string& name) const;
};

// Every 4-bit matrix, in section order (head last).
std::vector<MatrixSpec> llm_matrices(const LlmShape& shape);
// The expected table. `max_positions` sizes rope.cos_ext/sin_ext.
LlmLayout llm_layout(const LlmShape& shape, int64_t max_positions);

// Byte counts of the encodings (docs/formats.md "4-bit matrices").
uint64_t q4_quant_bytes(int64_t rows, int64_t cols);        // rows*cols/2
uint64_t q4_scale_bytes(int64_t rows, int64_t cols);        // rows*(cols/32)*4
uint64_t q4_zero_point_bytes(int64_t rows, int64_t cols);   // rows*(cols/32) nibbles, whole u32 words

std::string layer_prefix(int layer);  // "L3."

}  // namespace ember::formats
