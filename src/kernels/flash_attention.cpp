#include "kernels/flash_attention.h"

#include <algorithm>

#include "common/error.h"

namespace ember::kernels {
namespace {

struct FlashParams {
  uint32_t nq, nk, q_stride, kv_stride;
  uint32_t o_stride, q_offset, k_offset, v_offset;
  float scale;
  uint32_t key_chunk, key_splits, pad;
};
static_assert(sizeof(FlashParams) == 48);

struct MergeParams {
  uint32_t nq, heads, batches, splits;
  uint32_t o_stride, pad[3];
};
static_assert(sizeof(MergeParams) == 32);

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

// The key splits that run: keys per split a multiple of the K/V tile, no split empty.
struct KeySplit {
  uint32_t chunk, splits;
};
KeySplit key_split(const FlashAttentionArgs& a) {
  if (a.key_splits <= 1 || a.keys_per_tile == 0) return {a.nk, 1};
  const uint32_t per = (a.nk + a.key_splits - 1) / a.key_splits;
  const uint32_t chunk = (per + a.keys_per_tile - 1) / a.keys_per_tile * a.keys_per_tile;
  return {chunk, (a.nk + chunk - 1) / chunk};
}

// The partials buffer: the splits' outputs, then (at a 256-byte boundary) their log-sum-exps.
struct PartialsLayout {
  uint64_t out_floats, lse_offset, lse_floats;
};
PartialsLayout partials_layout(const FlashAttentionArgs& a, uint32_t splits) {
  const uint64_t out = uint64_t(splits) * a.batch * a.nq * a.o_stride;
  return {out, (out + 63) / 64 * 64, uint64_t(splits) * a.batch * a.heads * a.nq};
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

namespace {

Dispatch attention_dispatch(gpu::KernelCache& kernels, const FlashAttentionArgs& a, const std::string& region, KeySplit split) {
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
      if (a.keys_per_tile * 512 > dev.limits().maxComputeWorkgroupStorageSize)  // K and V tiles, 64 f32 a key each
        throw Error(std::to_string(a.keys_per_tile) + " keys per tile need " + std::to_string(a.keys_per_tile * 512) +
                        " bytes of workgroup memory, the device has " + std::to_string(dev.limits().maxComputeWorkgroupStorageSize),
                    where, "use fewer keys per tile");
      key = {.file = oct ? "flash_attention_oct.wgsl" : "flash_attention_quad.wgsl", .constants = {{"BQ", queries}, {"BK", a.keys_per_tile}}};
      if (a.prefetch_tile) {
        if (!tile_prefetch_fits(queries, a.keys_per_tile))
          throw Error("tile prefetch needs keys_per_tile x 16 (" + std::to_string(a.keys_per_tile * 16) + ") a multiple of the " + std::to_string(queries) +
                          " queries per workgroup, at most 8 times it",
                      where, "use more queries per workgroup or fewer keys per tile, or no prefetch");
        key.defines.insert("PREFETCH");
      }
      if (oct && a.lazy_rescale) key.defines.insert("LAZY_RESCALE");
      if (oct && a.fused_pv) key.defines.insert("FUSED_PV");
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
  if (a.causal) {
    if (a.variant != FlashVariant::Plain)
      throw Error("the causal mask is implemented by the plain flash attention only", where, "use FlashVariant::Plain");
    if (a.nq != a.nk) throw Error("causal attention needs as many queries as keys", where);
    key.defines.insert("CAUSAL");
  }
  if (a.head_dim != 64 && !(a.variant == FlashVariant::Tiled && a.head_dim == 32))
    throw Error("head size " + std::to_string(a.head_dim) + " is not supported by this variant", where,
                "head size 64; the tiled variant also takes 32");
  Dispatch d;
  if (queries == 0) throw Error("queries per workgroup must be at least 1", where);
  std::vector<gpu::Binding> bindings{{a.q}, {a.kv}, {a.out}, {nullptr}};
  if (split.splits > 1) {
    if (a.variant != FlashVariant::Oct) throw Error("key splits need the oct flash attention", where, "use --attention oct or no splits");
    if (!a.partials || a.partials->size() < 4 * flash_partials_floats(a))
      throw Error("split attention needs a partials buffer of " + std::to_string(flash_partials_floats(a)) + " floats", where);
    key.defines.insert("KEY_SPLIT");
    const PartialsLayout l = partials_layout(a, split.splits);
    bindings[2] = {a.partials, 0, 4 * l.out_floats};
    bindings.push_back({a.partials, 4 * l.lse_offset, 4 * l.lse_floats});
  }
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = dev.create_uniform(FlashParams{a.nq, a.nk, a.q_stride, a.kv_stride, a.o_stride, a.q_offset, a.k_offset, a.v_offset, a.scale,
                                            split.chunk, split.splits, 0},
                                "flash_attention params " + region);
  bindings[3] = {&d.params};
  d.group = kernels.bind(*d.kernel, bindings);
  d.x = (a.nq + queries - 1) / queries;
  d.y = a.heads;
  d.z = a.batch * split.splits;
  return d;
}

}  // namespace

uint64_t flash_partials_floats(const FlashAttentionArgs& a) {
  const KeySplit split = key_split(a);
  if (split.splits == 1) return 0;
  const PartialsLayout l = partials_layout(a, split.splits);
  return l.lse_offset + l.lse_floats;
}

Dispatch flash_attention(gpu::KernelCache& kernels, const FlashAttentionArgs& a, const std::string& region) {
  if (a.key_splits > 1) throw Error("split attention takes two dispatches", "flash_attention " + region, "use flash_attention_dispatches");
  return attention_dispatch(kernels, a, region, {a.nk, 1});
}

std::vector<Dispatch> flash_attention_dispatches(gpu::KernelCache& kernels, const FlashAttentionArgs& a, const std::string& region) {
  const KeySplit split = key_split(a);
  std::vector<Dispatch> out;
  out.push_back(attention_dispatch(kernels, a, region, split));
  if (split.splits == 1) return out;
  const PartialsLayout l = partials_layout(a, split.splits);
  Dispatch d;
  d.kernel = &kernels.get({.file = "flash_attention_merge.wgsl", .constants = {{"WG", 256}}});
  d.region = region + ".merge";
  d.params = kernels.device().create_uniform(MergeParams{a.nq, a.heads, a.batch, split.splits, a.o_stride, {}},
                                             "flash_attention merge params " + region);
  d.group = kernels.bind(*d.kernel, {{a.partials, 0, 4 * l.out_floats}, {a.partials, 4 * l.lse_offset, 4 * l.lse_floats}, {a.out},
                                     {&d.params}});
  grid_1d(d, (uint64_t(a.batch) * a.nq * a.heads * 16 + 255) / 256);
  out.push_back(std::move(d));
  return out;
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
