// GQA attention over the KV cache (layout of kv_write.h: [positions][kv_heads][head_dim + padding]).
//   AttentionDecode: one query token, flash-decoding (attention_decode.wgsl + attention_combine.wgsl);
//     L = StepParams.start + 1; the block count B is a record() argument (no new bind groups);
//     B = 1 is one dispatch (attention_decode.wgsl DIRECT writes the output, no combine).
//   AttentionPrefill: T causal queries at StepParams.start + t, one per thread with its accumulator in
//     registers, K/V tiles shared in workgroup memory (attention_prefill.wgsl); head_dim <= 64;
//     T is read from StepParams.rows, which must equal record()'s T. With subgroups, head size 64
//     and 16-byte aligned rows: 4 queries per lane quad instead (attention_prefill_quad.wgsl).
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

// Mirrors `struct AttentionParams` in attention_params.wgsl.
struct AttentionParams {
  uint32_t heads, kv_heads, head_dim, row, q_stride, q_offset;
  float scale;
  uint32_t seq_stride, k_offset, v_offset;
  float eps;
  uint32_t pad0;
};
static_assert(sizeof(AttentionParams) == 48);

// Threads of the one-block decode attention where the candidate does not say (AttentionConfig).
inline constexpr uint32_t kDefaultDirectWorkgroup = 512;

struct AttentionConfig {
  uint32_t heads = 0, kv_heads = 0, head_dim = 0;  // heads a multiple of kv_heads
  uint32_t padding = 0;                 // extra elements per cache row
  uint32_t q_stride = 0, q_offset = 0;  // elements per token / of token 0 in q; stride 0 = heads * head_dim
  float scale = 0;                      // 0 = 1 / sqrt(head_dim)
  bool subgroups = false;               // subgroup reductions (shared memory otherwise); prefill: the quad kernel
  uint32_t workgroup = 64;              // decode: keys per tile (power of two)
  uint32_t max_blocks = 64;             // decode: largest B record() accepts (sizes the partials)
  uint32_t max_sequences = 1;           // decode: most sequences one record() steps (sizes the partials)
  uint32_t seq_stride = 0;              // decode: elements between two sequences' caches
  // Decode, quad kernel: threads of the one-block (DIRECT) kernel, one workgroup per head (a power
  // of two >= workgroup, up to the adapter's limit); 0 = kDefaultDirectWorkgroup. Wide covers a
  // long context in few rounds; narrow leaves each lane more registers (`ember tune` measures it).
  uint32_t direct_workgroup = 0;
  // Decode: q is the token's raw fused qkv row (k at k_offset, v at v_offset, elements): the
  // kernel applies the per-head q/k RMSNorm (eps) and RoPE and appends k/v to the caches, the job
  // of QkNormRopeKv, in the attention dispatch. Honoured by the quad kernel only (subgroups, head
  // size 64, aligned rows); fuses_norm_rope_kv() says whether it was.
  bool norm_rope_kv = false;
  uint32_t k_offset = 0, v_offset = 0;
  float eps = 0;
  uint32_t query_tile = 64;             // prefill: queries per workgroup = threads
  uint32_t key_tile = 32;               // prefill: keys per workgroup-memory tile (multiple of 8)
};

// The widest one-block decode attention width: min(1024, the invocation limit).
uint32_t widest_direct_workgroup(const gpu::Device& device);
// Whether `threads` is a one-block width this device runs beside a tile workgroup of
// `tile_workgroup`: a power of two in tile_workgroup .. widest_direct_workgroup(device).
bool direct_workgroup_fits(uint32_t threads, uint32_t tile_workgroup, const gpu::Device& device);

class AttentionDecode {
 public:
  AttentionDecode(gpu::KernelCache& kernels, const AttentionConfig& config);
  struct Groups {
    gpu::BindGroup partials, combine, direct;  // direct: the one-block kernel (B = 1, no combine)
  };
  // q: the token's queries ([heads][head_dim] at q_offset); out: dense [heads][head_dim];
  // step: StepParams with start = the token's position (its k/v already written to the cache).
  // Several sequences: step holds one StepParams per sequence ({start, seq}), q and out one row
  // per sequence, the caches one slot per sequence at seq_stride; record() steps the first
  // `sequences` entries.
  Groups bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding out, gpu::Binding step) const;
  // With fuses_norm_rope_kv(): also the norm weights ([head_dim] each) and the RoPE tables
  // ([positions][head_dim / 2]); step.start is the token's position, its k/v not yet in the cache.
  struct NormRope {
    gpu::Binding q_norm, k_norm, cos, sin;
  };
  Groups bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding out, gpu::Binding step,
              const NormRope& norm_rope) const;
  void record(gpu::Recorder& rec, const Groups& groups, uint32_t blocks, uint32_t sequences = 1) const;
  bool fuses_norm_rope_kv() const { return config_.norm_rope_kv; }
  // Threads per workgroup of the one-block kernel (the quad kernel's direct_workgroup, narrowed
  // to fit the adapter's workgroup memory; the general kernel: workgroup).
  uint32_t direct_threads() const { return direct_threads_; }

 private:
  gpu::KernelCache& kernels_;
  AttentionConfig config_;
  uint32_t direct_threads_ = 0;
  const gpu::Kernel* partials_kernel_ = nullptr;
  const gpu::Kernel* combine_kernel_ = nullptr;
  const gpu::Kernel* direct_kernel_ = nullptr;
  gpu::Buffer params_, partials_;
};

class AttentionPrefill {
 public:
  AttentionPrefill(gpu::KernelCache& kernels, const AttentionConfig& config);
  // out: dense [T][heads][head_dim]; step: StepParams {start, rows = T}.
  gpu::BindGroup bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding out,
                      gpu::Binding step) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;
  const gpu::Kernel& kernel() const { return *kernel_; }

 private:
  gpu::KernelCache& kernels_;
  AttentionConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
