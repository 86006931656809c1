// What the pack's candidate asks of the engine, turned into concrete kernel configurations for
// this device: per-matrix matvec variant and geometry (candidate, else the knee, else defaults),
// the fused MLP, flash-decoding block counts. Anything the device cannot honour falls back to
// safe defaults with a warning.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "kernels/matmul_q4.h"
#include "kernels/matvec_q4.h"

namespace ember::llm {

struct KernelChoices {
  struct Matvec {
    kernels::Q4Variant variant = kernels::Q4Variant::carried;
    kernels::MatvecGeometry geometry;
  };
  std::map<std::string, Matvec> matvec;  // by shape key: attn_qkv, conv_in_proj, ..., head
  // Prefill matmul geometry by shape key (candidate's prefillMatmul: wgTokens, wgRows, kStep,
  // micro, vec4); absent: matmul_for's default.
  std::map<std::string, kernels::MatmulGeometry> matmul;
  bool unfused = false;
  bool mlp_pair = false;                 // fused MLP over down.kquant (decode)
  uint32_t mlp_slices = 40, mlp_workgroup = 256;
  // The fused MLP's down products in f16 (candidate mlpHalfProduct "down", where the adapter has
  // shader-f16). mlpHalfDot (its gate/up dot products in f16) is not honoured: see mlp_q4.wgsl.
  bool mlp_half_product = false;
  bool subgroups = false;                // subgroup reductions in norms/attention
  bool conv_fuse = true;
  // Decode fusions (all off with `unfused`, the reference path): the op, ffn and head RMSNorms
  // computed in the prologue of the matvec / fused MLP that reads them (candidate extra key
  // `normFuse`, default on), silu(gate) * up as the epilogue of the gate_up matvec, and the conv
  // step as the epilogue of the conv in_proj matvec.
  bool norm_fuse = true;
  bool gated_gate_up = true;
  bool conv_step_in_proj = true;
  // Attention input (decode and prefill): q/k norms, RoPE and the KV append as one dispatch (off with unfused).
  bool qk_fuse = true;
  // Decode: that step inside the attention dispatch instead (the quad decode kernel, where it
  // applies; candidate extra key `qkInAttention`, default on; off with unfused).
  bool qk_in_attention = true;
  // Each decode matvec reads the next one's weights into the L2 cache (extra workgroups; candidate
  // extra key `decodePrefetch`, default on for GPUs, off for CPU adapters and with `unfused`).
  bool prefetch = false;
  uint32_t padding = 0;                  // extra elements per KV row
  std::vector<formats::FlashOptimum> flash_optima;
  uint32_t flash_blocks = 1;
  // Threads of the one-block decode attention (candidate extra key `flashDirectWorkgroup`, written
  // by `ember tune`); 0 = the kernel default (kernels::kDefaultDirectWorkgroup).
  uint32_t flash_direct_workgroup = 0;
  // Decode: each layer's out projection and MLP as one dispatch of this many workgroups, which
  // wait for each other's words instead of dispatch boundaries (kernels::ResidualMlpQ4; candidate
  // extra key `residualMlpWorkgroups`, written by `ember tune`); 0 = three matvec dispatches. The
  // model checks once on the device that the grid runs all at once, and falls back otherwise.
  uint32_t residual_mlp_workgroups = 0;
  std::vector<std::string> warnings;

  // The down copy that is this run's model weight (docs/formats.md "One model, one set of weights").
  const char* down_copy() const { return mlp_pair ? "kquant" : "quant"; }
  // Flash-decoding block count for a cache of `length` positions.
  uint32_t blocks_for(uint32_t length) const;
  const Matvec& matvec_for(const std::string& shape_key) const;
  // The candidate's geometry, else 16x16 threads, K step 16, micro 8 (qmatmul's measured best
  // structure), micro 4 where that would make under 128 workgroups for `rows` x `tokens`.
  kernels::MatmulGeometry matmul_for(const std::string& shape_key, uint32_t rows, uint32_t tokens) const;
};

KernelChoices choose_kernels(const formats::LlmPack& pack, const gpu::Device& device);

}  // namespace ember::llm
