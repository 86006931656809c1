#include "kernels/conv3d.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t d, h, w, cin, cout, k, padded_cols, voxels;
};
static_assert(sizeof(Params) == 32);

}  // namespace

Dispatch conv3d(gpu::KernelCache& kernels, const Conv3dArgs& a, const std::string& region) {
  const QuantizedMatrix& m = *a.w;
  if (m.cols % 27 != 0) throw Error("conv3d weight has " + std::to_string(m.cols) + " columns, not in_channels x 27", region);
  if (m.padded_cols % 64 != 0 || m.padded_rows % 16 != 0) throw Error("conv3d weight is not padded to 16 x 64 tiles", region);
  if (a.residual == a.y) throw Error("conv3d residual must be another buffer than the output", region);
  const uint64_t voxels = uint64_t(a.d) * a.h * a.w_size;
  if (voxels == 0 || voxels > 0xffffffffull / 64) throw Error("conv3d volume of " + std::to_string(voxels) + " voxels", region);
  uint32_t tn = a.rows_per_workgroup;
  if (tn != 16 && tn != 32 && tn != 64) throw Error("conv3d rows per workgroup must be 16, 32 or 64", region);
  while (m.padded_rows % tn != 0) tn /= 2;
  gpu::KernelKey key{.file = "conv3d.wgsl", .constants = {{"TN", tn}}};
  if (a.residual) key.defines.insert("RESIDUAL");
  Dispatch d;
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(
      Params{a.d, a.h, a.w_size, m.cols / 27, m.rows, m.cols, m.padded_cols, uint32_t(voxels)}, "conv3d params " + region);
  std::vector<gpu::Binding> b{{a.x}, {&m.data}, {&m.scales}, {&m.bias}, {a.y}, {&d.params}};
  if (a.residual) b.push_back({a.residual});
  d.group = kernels.bind(*d.kernel, b);
  const uint64_t groups = (voxels + 63) / 64;
  if (groups > 65535) throw Error("conv3d volume too large for one dispatch (" + std::to_string(voxels) + " voxels)", region);
  d.x = uint32_t(groups);
  d.y = m.padded_rows / tn;
  return d;
}

}  // namespace ember::kernels
