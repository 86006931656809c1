#include "kernels/flash_attention.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct FlashParams {
  uint32_t nq, nk, q_stride, kv_stride;
  uint32_t o_stride, q_offset, k_offset, v_offset;
  float scale;
  uint32_t pad[3];
};
static_assert(sizeof(FlashParams) == 48);

struct NormParams {
  uint32_t rows, heads, stride, q_offset;
  uint32_t k_offset, pad[3];
};
static_assert(sizeof(NormParams) == 32);

bool aligned4(std::initializer_list<uint32_t> v) {
  for (uint32_t x : v)
    if (x % 4) return false;
  return true;
}

}  // namespace

Dispatch flash_attention(gpu::KernelCache& kernels, const FlashAttentionArgs& a, const std::string& region) {
  if (!aligned4({a.q_stride, a.q_offset, a.kv_stride, a.k_offset, a.v_offset, a.o_stride}))
    throw Error("attention strides and offsets must be multiples of 4 floats", "flash_attention " + region);
  if (a.nq == 0 || a.nk == 0) throw Error("attention needs at least one query and one key", "flash_attention " + region);
  if (a.quad && (a.queries_per_workgroup % 4 || !kernels.device().has_subgroups()))
    throw Error("the quad flash attention needs subgroups and a multiple of 4 queries per workgroup", "flash_attention " + region);
  Dispatch d;
  if (a.quad && (a.keys_per_tile == 0 || a.keys_per_tile % 8))
    throw Error("keys per tile must be a positive multiple of 8", "flash_attention " + region);
  gpu::KernelKey key{.file = "flash_attention.wgsl", .constants = {{"BQ", a.queries_per_workgroup}}};
  if (a.quad) key = {.file = "flash_attention_quad.wgsl", .constants = {{"BQ", a.queries_per_workgroup}, {"BK", a.keys_per_tile}}};
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(
      FlashParams{a.nq, a.nk, a.q_stride, a.kv_stride, a.o_stride, a.q_offset, a.k_offset, a.v_offset, a.scale, {}},
      "flash_attention params " + region);
  d.group = kernels.bind(*d.kernel, {{a.q}, {a.kv}, {a.out}, {&d.params}});
  d.x = (a.nq + a.queries_per_workgroup - 1) / a.queries_per_workgroup;
  d.y = a.heads;
  d.z = a.batch;
  return d;
}

Dispatch head_rms_norm(gpu::KernelCache& kernels, const HeadRmsNormArgs& a, const std::string& region) {
  if (!aligned4({a.stride, a.q_offset, a.k_offset}))
    throw Error("head_rms_norm stride and offsets must be multiples of 4 floats", region);
  Dispatch d;
  d.kernel = &kernels.get({.file = "head_rms_norm.wgsl", .constants = {{"WG", 64}}});
  d.region = region;
  d.params = kernels.device().create_uniform(NormParams{a.rows, a.heads, a.stride, a.q_offset, a.k_offset, {}},
                                             "head_rms_norm params " + region);
  d.group = kernels.bind(*d.kernel, {{a.x}, {a.gamma_q}, {a.gamma_k}, {&d.params}});
  grid_1d(d, (uint64_t(a.rows) * a.heads * 2 + 63) / 64);
  return d;
}

}  // namespace ember::kernels
