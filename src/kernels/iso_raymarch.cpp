#include "kernels/iso_raymarch.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Camera {
  float eye[4], right[4], up[4], forward[4];
};
struct Params {
  uint32_t n[4];
  uint32_t view, width;
  float iso;
  uint32_t pad;
  Camera cams[4];
};
static_assert(sizeof(Camera) == 64);
static_assert(sizeof(Params) == 32 + 4 * 64);

}  // namespace

uint32_t iso_image_width(const IsoRaymarchArgs& a) { return a.cameras.size() > 1 ? 2 * a.view : a.view; }
uint32_t iso_image_height(const IsoRaymarchArgs& a) { return a.cameras.size() > 2 ? 2 * a.view : a.view; }

Dispatch iso_raymarch(gpu::KernelCache& kernels, const IsoRaymarchArgs& a, const std::string& region) {
  if (a.cameras.empty() || a.cameras.size() > 4) throw Error("iso_raymarch renders 1 to 4 views", region);
  if (a.view == 0 || a.view > 4096) throw Error("iso_raymarch view size must be within 1..4096", region);
  if (a.n[0] == 0 || a.n[1] == 0 || a.n[2] == 0) throw Error("iso_raymarch needs a non-empty grid", region);
  Params p{};
  for (int i = 0; i < 3; i++) p.n[i] = a.n[size_t(i)];
  p.n[3] = uint32_t(a.cameras.size());
  p.view = a.view;
  p.width = iso_image_width(a);
  p.iso = a.iso;
  for (size_t c = 0; c < a.cameras.size(); c++) {
    const auto& cam = a.cameras[c];
    for (int i = 0; i < 3; i++) {
      p.cams[c].eye[i] = cam.eye[size_t(i)];
      p.cams[c].right[i] = cam.right[size_t(i)];
      p.cams[c].up[i] = cam.up[size_t(i)];
      p.cams[c].forward[i] = cam.forward[size_t(i)];
    }
    p.cams[c].right[3] = cam.half_extent;
  }
  Dispatch d;
  d.kernel = &kernels.get({.file = "iso_raymarch.wgsl"});
  d.region = region;
  d.params = kernels.device().create_uniform(p, "iso_raymarch params " + region);
  d.group = kernels.bind(*d.kernel, {{a.field}, {a.image}, {&d.params}});
  d.x = (p.width + 7) / 8;
  d.y = (iso_image_height(a) + 7) / 8;
  return d;
}

}  // namespace ember::kernels
