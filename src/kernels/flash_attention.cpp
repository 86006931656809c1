#include "kernels/flash_attention.h"

#include <algorithm>

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

uint32_t flash_tiled_workgroup_bytes(const FlashTiledGeometry& g, uint32_t head_dim) {
  const uint32_t keys = 8 * g.keys_per_thread;
  return 4 * (head_dim * g.queries + std::max(head_dim, g.queries) * keys + keys * head_dim);
}

bool tile_prefetch_fits(uint32_t queries, uint32_t keys) {
  const uint32_t vec4s = keys * 16;
  return queries > 0 && vec4s % queries == 0 && vec4s / queries <= 8;
}

Dispatch flash_attention(gpu::KernelCache& kernels, const FlashAttentionArgs& a, const std::string& region) {
  const std::string where = "flash_attention " + region;
  if (!aligned4({a.q_stride, a.q_offset, a.kv_stride, a.k_offset, a.v_offset, a.o_stride}))
    throw Error("attention strides and offsets must be multiples of 4 floats", where);
  if (a.nq == 0 || a.nk == 0) throw Error("attention needs at least one query and one key", where);
  const gpu::Device& dev = kernels.device();
  gpu::KernelKey key;
  uint32_t queries = a.queries_per_workgroup;
  switch (a.variant) {
    case FlashVariant::Plain:
      key = {.file = "flash_attention.wgsl", .constants = {{"BQ", queries}}};
      break;
    case FlashVariant::Quad:
    case FlashVariant::Oct: {
      const bool oct = a.variant == FlashVariant::Oct;
      if (queries % (oct ? 8 : 4) || !dev.has_subgroups() || (oct && dev.subgroup_size() % 8))
        throw Error(oct ? "the oct flash attention needs subgroups of a multiple of 8 lanes and a multiple of 8 queries per workgroup"
                        : "the quad flash attention needs subgroups and a multiple of 4 queries per workgroup",
                    where);
      if (a.keys_per_tile == 0 || a.keys_per_tile % 8) throw Error("keys per tile must be a positive multiple of 8", where);
      key = {.file = oct ? "flash_attention_oct.wgsl" : "flash_attention_quad.wgsl", .constants = {{"BQ", queries}, {"BK", a.keys_per_tile}}};
      if (a.prefetch_tile) {
        if (!tile_prefetch_fits(queries, a.keys_per_tile))
          throw Error("tile prefetch needs keys_per_tile x 16 (" + std::to_string(a.keys_per_tile * 16) + ") a multiple of the " + std::to_string(queries) +
                          " queries per workgroup, at most 8 times it",
                      where, "use more queries per workgroup or fewer keys per tile, or no prefetch");
        key.defines.insert("PREFETCH");
      }
      break;
    }
    case FlashVariant::Tiled: {
      const FlashTiledGeometry& g = a.tiled;
      queries = g.queries;
      if (!dev.has_subgroups() || dev.subgroup_size() % 8)
        throw Error("the tiled flash attention needs subgroups of a multiple of 8 lanes", where, "use the quad or plain variant");
      auto four_or_eight = [](uint32_t v) { return v == 4 || v == 8; };
      if (!four_or_eight(g.queries_per_thread) || !four_or_eight(g.keys_per_thread) || g.queries == 0 ||
          g.queries % g.queries_per_thread)
        throw Error("tiled geometry " + std::to_string(g.queries) + "/" + std::to_string(g.queries_per_thread) + "/" +
                        std::to_string(g.keys_per_thread) + " is not valid",
                    where, "queries per thread and keys per thread are 4 or 8; queries a multiple of queries per thread");
      const uint32_t bytes = flash_tiled_workgroup_bytes(g, a.head_dim);
      if (bytes > dev.limits().maxComputeWorkgroupStorageSize)
        throw Error("tiled geometry needs " + std::to_string(bytes) + " bytes of workgroup memory, the device has " +
                        std::to_string(dev.limits().maxComputeWorkgroupStorageSize),
                    where, "use fewer queries per workgroup or 4 keys per thread");
      if ((g.queries / g.queries_per_thread) * 8 > dev.limits().maxComputeInvocationsPerWorkgroup)
        throw Error("tiled geometry needs more invocations per workgroup than the device has", where);
      key.file = "flash_attention_tiled.wgsl";
      if (a.head_dim == 32) key.defines.insert("HEAD_DIM_32");
      if (g.queries_per_thread == 4) key.defines.insert("QUERIES_PER_THREAD_4");
      if (g.keys_per_thread == 4) key.defines.insert("KEYS_PER_THREAD_4");
      if (g.prefetch) key.defines.insert("PREFETCH");
      key.constants = {{"BQ", queries}};
      break;
    }
  }
  if (a.head_dim != 64 && !(a.variant == FlashVariant::Tiled && a.head_dim == 32))
    throw Error("head size " + std::to_string(a.head_dim) + " is not supported by this variant", where,
                "head size 64; the tiled variant also takes 32");
  Dispatch d;
  if (queries == 0) throw Error("queries per workgroup must be at least 1", where);
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = dev.create_uniform(FlashParams{a.nq, a.nk, a.q_stride, a.kv_stride, a.o_stride, a.q_offset, a.k_offset, a.v_offset, a.scale, {}},
                                "flash_attention params " + region);
  d.group = kernels.bind(*d.kernel, {{a.q}, {a.kv}, {a.out}, {&d.params}});
  d.x = (a.nq + queries - 1) / queries;
  d.y = a.heads;
  d.z = a.batch;
  return d;
}

Dispatch head_rms_norm(gpu::KernelCache& kernels, const HeadRmsNormArgs& a, const std::string& region) {
  if (!aligned4({a.stride, a.q_offset, a.k_offset}))
    throw Error("head_rms_norm stride and offsets must be multiples of 4 floats", region);
  const gpu::Device& dev = kernels.device();
  const bool subgroups = a.subgroups && dev.has_subgroups() && dev.subgroup_size() >= 8;
  gpu::KernelKey key{.file = "head_rms_norm.wgsl", .constants = {{"WG", 64}}};
  if (subgroups) key.defines.insert("SUBGROUPS");
  Dispatch d;
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(NormParams{a.rows, a.heads, a.stride, a.q_offset, a.k_offset, {}},
                                             "head_rms_norm params " + region);
  d.group = kernels.bind(*d.kernel, {{a.x}, {a.gamma_q}, {a.gamma_k}, {&d.params}});
  grid_1d(d, (uint64_t(a.rows) * a.heads * 2 * (subgroups ? 8 : 1) + 63) / 64);
  return d;
}

}  // namespace ember::kernels
