#include "kernels/layer_norm.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t rows, channels, tokens_per_batch, mod_stride;
  uint32_t shift_offset, scale_offset;
  float eps;
  uint32_t pad;
};
static_assert(sizeof(Params) == 32);

}  // namespace

Dispatch layer_norm(gpu::KernelCache& kernels, const LayerNormArgs& a, const std::string& region) {
  if ((a.weight == nullptr) != (a.bias == nullptr)) throw Error("layer_norm affine needs both weight and bias", region);
  if (a.workgroup == 0 || (a.workgroup & (a.workgroup - 1))) throw Error("layer_norm workgroup must be a power of two", region);
  gpu::KernelKey key{.file = "layer_norm.wgsl", .constants = {{"WG", a.workgroup}}};
  if (a.weight) key.defines.insert("AFFINE");
  if (a.mods) key.defines.insert("MODULATE");
  if (a.subgroups) key.defines.insert("SUBGROUPS");
  if (a.silu) key.defines.insert("SILU");
  const bool row_lanes = a.subgroups && a.row_lanes && a.channels % 32 == 0 && a.channels <= 32 * 32 &&
                         kernels.device().subgroup_size() >= 8 && a.workgroup >= 8 &&
                         (!a.mods || (a.mod_stride % 4 == 0 && a.shift_offset % 4 == 0 && a.scale_offset % 4 == 0));
  if (row_lanes) {
    key.defines.insert("ROW_LANES");
    key.constants.push_back({"VPL", a.channels / 32});
  }
  Dispatch d;
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(
      Params{a.rows, a.channels, a.tokens_per_batch, a.mod_stride, a.shift_offset, a.scale_offset, a.eps, 0},
      "layer_norm params " + region);
  std::vector<gpu::Binding> b{{a.x}, {a.y}, {&d.params}};
  if (a.weight) {
    b.push_back({a.weight});
    b.push_back({a.bias});
  }
  if (a.mods) b.push_back({a.mods});
  d.group = kernels.bind(*d.kernel, b);
  if (row_lanes) {
    grid_1d(d, (uint64_t(a.rows) * 8 + a.workgroup - 1) / a.workgroup);
  } else {
    d.x = a.rows < 65535 ? a.rows : 65535;
    d.y = (a.rows + 65534) / 65535;
  }
  return d;
}

}  // namespace ember::kernels
