// runtime.json of an LLM pack (seed 000's format): `runtime` (model shape, section table of
// weights.bin, limits, tuning facts) and `candidate` (the kernel choices the engine obeys).
// Parsed into typed structs; keys ember does not know are kept in `extra` (written back
// unchanged) and listed in `unknown_keys`, never fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/json_text.h"
#include "formats/problems.h"

namespace ember::formats {

enum class LayerType { Conv, Attention };
const char* layer_type_name(LayerType t);  // "conv" | "attention" (the pack's spelling)

struct LlmShape {
  std::vector<LayerType> layer_types;
  int64_t hidden = 0, ffn = 0, vocab = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t conv_cache = 3, quant_bits = 4, quant_block = 32;
  std::optional<double> norm_eps;    // RMSNorm eps; absent = 1e-5
  std::optional<double> rope_theta;  // informational: the rope tables are in weights.bin
  OrderedJson extra = OrderedJson::object();

  double eps() const { return norm_eps.value_or(1e-5); }
  int64_t layers() const { return static_cast<int64_t>(layer_types.size()); }
  int64_t q_rows() const { return heads * head_dim; }
  int64_t kv_rows() const { return kv_heads * head_dim; }
  int64_t qkv_rows() const { return q_rows() + 2 * kv_rows(); }
};

struct Section {
  std::string name;
  uint64_t offset = 0, bytes = 0;
  OrderedJson extra = OrderedJson::object();
};

struct Geometry {
  int64_t workgroup_size = 0, subgroup_size = 0, rows_per_subgroup = 0, subgroups_per_row = 0;
  OrderedJson extra = OrderedJson::object();
};

struct KneeEntry {
  std::string shape;  // matrix shape name: attn_qkv, conv_in_proj, mlp_down, head, ...
  Geometry geometry;
  OrderedJson extra = OrderedJson::object();
};

struct FlashOptimum {
  int64_t positions = 0, blocks = 0;
  OrderedJson extra = OrderedJson::object();
};

struct Runtime {
  LlmShape shape;
  std::string weights_url = "/weights.bin";
  uint64_t weight_bytes = 0;
  std::vector<Section> sections;
  int64_t max_queries = 1, max_positions = 0, sample_partials = 256, plan_position = 1024;
  int64_t max_total_positions = 0;
  std::vector<KneeEntry> knee;
  std::string dequant_variant = "carried";
  std::vector<FlashOptimum> flash_optima;
  std::vector<std::string> extra_features;
  std::string power_preference = "high-performance";
  int64_t expected_subgroup_size = 0;
  OrderedJson extra = OrderedJson::object();

  const Section* find_section(const std::string& name) const;
  const Geometry* knee_for(const std::string& matrix_shape) const;
};

struct MatvecChoice {
  Geometry geometry;
  std::string variant;  // "carried" | "v3_both" | ...
  OrderedJson extra = OrderedJson::object();
};

struct Candidate {
  std::string key = "default";
  bool flash = false, unfused = false;
  int64_t padding = 0;
  std::string flash_mode = "subgroup";
  std::vector<std::pair<std::string, MatvecChoice>> matvec;  // in file order
  std::string mlp_mode = "subgroup";
  int64_t mlp_slices = 0, mlp_workgroup = 0;
  bool norm_subgroup = false, conv_fuse = false, flash_online = false;
  int64_t flash_blocks = 0;
  bool mlp_pair = false;  // true: the fused MLP, and down.kquant is THE down weight of the run
  int64_t fold_lanes = 0;
  bool fold_subgroup = false;
  std::string mlp_half_dot = "none", mlp_half_product = "none";  // "gate", "down", "none", ...
  OrderedJson extra = OrderedJson::object();

  const MatvecChoice* matvec_for(const std::string& matrix_shape) const;
  // Which down copy is the model's weight in a run with this candidate (DESIGN "One model"):
  // `unfused` turns the fused MLP off, and with it kquant (as the engine's kernel choice does).
  const char* down_copy() const { return mlp_pair && !unfused ? "kquant" : "quant"; }
};

struct RuntimeFile {
  Runtime runtime;
  Candidate candidate;
  bool has_candidate = false;
  OrderedJson extra = OrderedJson::object();  // unknown top-level keys
  std::vector<std::string> unknown_keys;      // dotted paths of every key kept in an `extra`
};

// Parses runtime.json text. Syntax errors throw (with line/column); missing or mistyped fields
// and unknown layer types are added to `problems` (file label `file`), so that a validator can
// report them with everything else.
RuntimeFile parse_runtime_json(const std::string& text, const std::string& file, Problems& problems);
RuntimeFile parse_runtime_json(const OrderedJson& j, const std::string& file, Problems& problems);
// Same, throwing one Error listing every problem.
RuntimeFile parse_runtime_json(const std::string& text, const std::string& file);

// Writes the seed's layout back: known keys in the seed's order, then the kept unknown keys.
OrderedJson to_json(const RuntimeFile& f);
OrderedJson to_json(const LlmShape& s);
OrderedJson to_json(const Candidate& c);

}  // namespace ember::formats
