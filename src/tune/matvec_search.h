// The matvec part of `ember tune`: for one matrix shape of the model, every variant x geometry
// the candidate format allows, each checked against the reference configuration on the same
// random input (rejected above rel_l2 1e-5) and timed on the pack's real weights.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_runtime.h"
#include "kernels/matvec_q4.h"
#include "tune/kernel_timer.h"

namespace ember::tune {

using Clock = std::chrono::steady_clock;

// One matrix shape as the decode graph multiplies it (mode and zero points as in the model).
struct MatrixShape {
  std::string key;     // attn_qkv, attn_o_proj, conv_in_proj, conv_out_proj, mlp_gate_up, mlp_down, head
  std::string prefix;  // the sections measured: the first matrix of that shape ("L0.conv.in_proj")
  uint32_t rows = 0, cols = 0;
  bool asymmetric = false;
  kernels::OutputMode mode = kernels::OutputMode::overwrite;
  int count = 0;       // matrices of this shape a decode step multiplies
  uint64_t bytes() const;  // bytes one matvec reads (quant + scales + zero points)
};
// The model's shapes, in the candidate's order.
std::vector<MatrixShape> matrix_shapes(const formats::LlmShape& shape);

struct MatvecConfigChoice {
  kernels::Q4Variant variant = kernels::Q4Variant::carried;
  kernels::MatvecGeometry geometry;
  std::string describe() const;  // "v3_both wg256 sg32 r4 s1"
  nlohmann::json to_json() const;
};

struct MatvecMeasurement {
  MatvecConfigChoice config;
  double us = 0;        // median GPU time (0 when rejected or invalid)
  double rel_l2 = 0;    // against the reference configuration
  std::string rejected; // why not usable ("" = usable)
};

struct MatvecShapeResult {
  MatrixShape shape;
  MatvecMeasurement reference;  // the default (carried, the safe geometry): the baseline
  MatvecMeasurement best;
  std::optional<MatvecMeasurement> input;  // the pack's own choice for this shape, when measured
  kernels::MatvecGeometry knee;  // smallest geometry within 3% of the best
  int tried = 0, rejected = 0, invalid = 0;
  bool budget_hit = false;
  std::vector<MatvecMeasurement> timed;  // every usable configuration measured, fastest first
  // Where whole decode steps ranked this shape (the tuner's head round) and chose another than
  // `best`: that one, which runtime.json gets.
  std::optional<MatvecMeasurement> step_choice;
  const MatvecMeasurement& chosen() const { return step_choice ? *step_choice : best; }
  nlohmann::json to_json() const;
};

// The geometry every adapter runs (kernel_choice.cpp's fallback): the tuner's reference.
kernels::MatvecGeometry reference_geometry(const gpu::Device& device);

// The search space: `first` (the pack's current choices) in front, then the grid
// {shared_x, v3_both, split_block, carried} x workgroup {64..512} x logical subgroup {s/2, s, 2s} x
// rows {1,2,4,8} x subgroupsPerRow {1,2}: shared_x first, then v3_both and split_block, carried
// last, each in a fixed shuffled order so a search cut short samples all of it.
std::vector<MatvecConfigChoice> matvec_space(const gpu::Device& device, const std::vector<MatvecConfigChoice>& first);

// Measures `space` (the reference first) on `w` until `deadline` (the reference is always measured).
// `input`: the pack's current choice for this shape (reported as `input` when measured).
MatvecShapeResult search_matvec(gpu::KernelCache& kernels, KernelTimer& timer, const MatrixShape& shape, const kernels::Q4Matrix& w,
                                const std::vector<MatvecConfigChoice>& space, Clock::time_point deadline,
                                const std::optional<MatvecConfigChoice>& input = std::nullopt);

}  // namespace ember::tune
