// TRELLIS SparseStructureFlowModel hyper-parameters, its state-dict names and shapes, and its
// stored absolute position embedding: what the synthesizer writes, the packer expects and the
// DiT reads back (from a stage pack, via the tensor shapes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::formats {

struct SsFlowConfig {
  int64_t resolution = 16;
  int64_t in_channels = 8;
  int64_t model_channels = 768;
  int64_t cond_channels = 768;
  int64_t out_channels = 8;
  int64_t num_blocks = 12;
  int64_t num_heads = 12;         // upstream: num_heads or model_channels / num_head_channels
  int64_t num_head_channels = 64;
  double mlp_ratio = 4;
  int64_t patch_size = 1;
  std::string pe_mode = "ape";    // "ape" stores pos_emb; "rope" is not supported
  bool share_mod = false;
  bool qk_rms_norm = true;
  bool qk_rms_norm_cross = false;
  bool use_fp16 = true;

  int64_t grid() const { return resolution / patch_size; }         // tokens per axis
  int64_t tokens() const { return grid() * grid() * grid(); }
  int64_t head_dim() const { return model_channels / num_heads; }
  int64_t mlp_channels() const { return static_cast<int64_t>(model_channels * mlp_ratio); }
  static constexpr int64_t kFreqDim = 256;  // timestep frequency embedding width (fixed upstream)
  nlohmann::json to_json() const;  // upstream format {"name": "SparseStructureFlowModel", "args": {...}}
};

// TRELLIS-text-base ss_flow_txt_dit_B_16l8_fp16 (seed 004's stage).
SsFlowConfig ss_flow_text_base_config();
// A tiny configuration for fast tests that the engine can run (heads of 64 channels): resolution 4
// (64 tokens), 128 channels, 2 heads, 2 blocks, cond 96 (not a multiple of the 64-column group).
SsFlowConfig ss_flow_tiny_config();

// Accepts the upstream file ({"name": ..., "args": {...}}) or the flat args object; unknown keys
// are ignored, missing ones take upstream's defaults. Errors name `where` and the field.
SsFlowConfig parse_ss_flow_config(const nlohmann::json& j, const std::string& where);
SsFlowConfig read_ss_flow_config(const std::string& path);

// Checks the config is one ember can run (divisibility, pe_mode); throws ember::Error.
void check_ss_flow_config(const SsFlowConfig& c, const std::string& where);

// Upstream state-dict names -> shapes (torch order: Linear weights are [out, in]).
std::map<std::string, std::vector<int64_t>> ss_flow_tensor_shapes(const SsFlowConfig& c);

// The hyper-parameters a set of tensors implies (from a checkpoint or a stage pack). patch_size
// cannot be told apart from in_channels by shapes alone: it is taken as 1 (every released
// TRELLIS sparse-structure flow model uses 1). Throws ember::Error naming a missing tensor.
SsFlowConfig infer_ss_flow_config(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& where);

// pos_emb [tokens][model_channels]: token n = (d*G + h)*G + w gets, with freq_dim =
// model_channels / 3 / 2 and f_i = 1 / 10000^(i / freq_dim), [sin(d f), cos(d f), sin(h f),
// cos(h f), sin(w f), cos(w f)], zero-padded to model_channels. Computed in f64, stored f32.
std::vector<float> ss_flow_pos_emb(const SsFlowConfig& c);

// Random weights with upstream's names and shapes (deterministic for a seed on every platform).
// Scaled so activations keep unit size through the stack and every block changes the output
// (a test on them sees each block): Linear weights N(0, 1/in) (adaLN_modulation N(0, 0.25/in)),
// biases N(0, 0.02^2), norm weights and q/k gammas 1 + N(0, 0.1^2), norm biases N(0, 0.02^2);
// pos_emb exact.
std::map<std::string, std::vector<float>> synth_ss_flow_weights(const SsFlowConfig& c, uint64_t seed);

}  // namespace ember::formats
