// Attention: flash attention (src/kernels/flash_attention.wgsl, flash_attention_quad.wgsl, flash_attention_oct.wgsl,
// flash_attention_tiled.wgsl; head size 64, the tiled one also 32; the oct one's key splits merged by
// flash_attention_merge.wgsl) and the per-head
// RMS norm of q and k (src/kernels/head_rms_norm.wgsl).
#pragma once

#include <vector>

#include "kernels/dispatch.h"

namespace ember::kernels {

enum class FlashVariant {
  Plain,  // flash_attention.wgsl: one query per thread
  Quad,   // flash_attention_quad.wgsl: 4 queries per lane quad (needs subgroups of a multiple of 4)
  Oct,    // flash_attention_oct.wgsl: 8 queries per lane octet (needs subgroups of a multiple of 8)
  Tiled,  // flash_attention_tiled.wgsl: FA2-style register tiles (needs subgroups of a multiple of 8)
};

// The tiled variant's geometry: a workgroup owns `queries` queries; per tile of 8 *
// keys_per_thread keys a thread computes queries_per_thread x keys_per_thread scores, then
// queries_per_thread x head_dim/8 outputs. queries_per_thread and keys_per_thread are 4 or 8.
struct FlashTiledGeometry {
  uint32_t queries = 64, queries_per_thread = 8, keys_per_thread = 8;
  bool prefetch = false;  // read each step's workgroup-memory operands one step ahead
  bool operator==(const FlashTiledGeometry&) const = default;
};

// Workgroup memory of the tiled variant in bytes (Q^T, K^T shared with P^T, V).
uint32_t flash_tiled_workgroup_bytes(const FlashTiledGeometry& g, uint32_t head_dim);

// Strides and offsets in floats, multiples of 4. See flash_attention.wgsl for the layout.
struct FlashAttentionArgs {
  const gpu::Buffer* q;
  const gpu::Buffer* kv;  // may be the same buffer as q
  const gpu::Buffer* out;
  uint32_t batch, heads, nq, nk;
  uint32_t q_stride, q_offset, kv_stride, k_offset, v_offset, o_stride;
  float scale;
  FlashVariant variant = FlashVariant::Plain;
  uint32_t queries_per_workgroup = 64;  // plain, quad and oct (multiple of 4 for quad, 8 for oct)
  uint32_t keys_per_tile = 32;          // quad, oct: keys per workgroup-memory tile (multiple of 8)
  // quad: read the next K/V tile into registers while the current one is used (needs
  // keys_per_tile * 16 a multiple of queries_per_workgroup, at most 8 times it).
  bool prefetch_tile = false;
  FlashTiledGeometry tiled{};
  uint32_t head_dim = 64;  // 64; the tiled variant also takes 32
  // oct: the keys split over this many workgroups per query block (flash-decoding), for grids too
  // small to fill the GPU; the partial outputs go to `partials` (flash_partials_floats floats) and a
  // second dispatch merges them into `out`. Fewer splits run where the keys are too few for all.
  uint32_t key_splits = 1;
  const gpu::Buffer* partials = nullptr;
  // oct, being measured: rescale only when a max grows by > 2^8; each key's exponentials consumed as made.
  bool lazy_rescale = false, fused_pv = false;
  // Query i sees keys 0..i only (a decoder's or CLIP's text model's causal mask; needs nq == nk).
  // The plain variant implements it.
  bool causal = false;
};

// Whether the quad and oct variants' tile prefetch can split a K/V tile evenly over the workgroup (at
// most 8 vec4 of each per thread).
bool tile_prefetch_fits(uint32_t queries_per_workgroup, uint32_t keys_per_tile);

// One dispatch; args.key_splits must be 1.
Dispatch flash_attention(gpu::KernelCache& kernels, const FlashAttentionArgs& args, const std::string& region = "");

// One dispatch, or with key splits two: the split attention, then `region + ".merge"`.
std::vector<Dispatch> flash_attention_dispatches(gpu::KernelCache& kernels, const FlashAttentionArgs& args,
                                                 const std::string& region = "");

// Floats of `partials` that args' key splits need (0 without splits).
uint64_t flash_partials_floats(const FlashAttentionArgs& args);

struct HeadRmsNormArgs {
  const gpu::Buffer* x;  // f32 rows, normalised in place
  const gpu::Buffer* gamma_q;  // f16 [heads][64]
  const gpu::Buffer* gamma_k;
  uint32_t rows, heads, stride, q_offset, k_offset;
  bool subgroups = true;  // 8 lanes per vector where the device has subgroups of at least 8
};

Dispatch head_rms_norm(gpu::KernelCache& kernels, const HeadRmsNormArgs& args, const std::string& region = "");

}  // namespace ember::kernels
