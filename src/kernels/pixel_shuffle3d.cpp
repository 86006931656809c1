#include "kernels/pixel_shuffle3d.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t d, h, w, c;
};
static_assert(sizeof(Params) == 16);

}  // namespace

Dispatch pixel_shuffle3d(gpu::KernelCache& kernels, const gpu::Buffer& x, const gpu::Buffer& y, uint32_t d, uint32_t h,
                         uint32_t w, uint32_t c, const std::string& region) {
  const uint64_t n = 8ull * d * h * w * c;
  if (n == 0 || n > 0xffffffffull) throw Error("pixel_shuffle3d of " + std::to_string(n) + " elements", region);
  Dispatch dp;
  dp.kernel = &kernels.get({.file = "pixel_shuffle3d.wgsl", .constants = {{"WG", 256}}});
  dp.region = region;
  dp.params = kernels.device().create_uniform(Params{d, h, w, c}, "pixel_shuffle3d params " + region);
  dp.group = kernels.bind(*dp.kernel, {{&x}, {&y}, {&dp.params}});
  grid_1d(dp, (n + 255) / 256);
  return dp;
}

}  // namespace ember::kernels
