#include "trellis/preview.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "formats/png.h"
#include "gpu/recorder.h"
#include "kernels/iso_raymarch.h"

namespace ember::trellis {

PreviewImage render_preview(gpu::KernelCache& kernels, std::span<const float> field, std::array<uint32_t, 3> n, uint32_t view,
                            float iso) {
  if (field.size() != size_t(n[0]) * n[1] * n[2]) throw Error("preview grid size mismatch", "preview");
  const gpu::Device& dev = kernels.device();
  kernels::IsoRaymarchArgs a{.field = nullptr, .image = nullptr, .n = n, .view = view, .cameras = {}, .iso = iso};
  const double elevation = 20.0 * M_PI / 180.0;
  for (int k = 0; k < 4; k++) {
    const double az = (30.0 + 90.0 * k) * M_PI / 180.0;
    // Looking at the origin from direction (cos el cos az, cos el sin az, sin el), z up.
    const double f[3] = {-std::cos(elevation) * std::cos(az), -std::cos(elevation) * std::sin(az), -std::sin(elevation)};
    double r[3] = {f[1], -f[0], 0.0};  // forward x z-up
    const double rl = std::hypot(r[0], r[1]);
    r[0] /= rl, r[1] /= rl;
    const double u[3] = {r[1] * f[2] - r[2] * f[1], r[2] * f[0] - r[0] * f[2], r[0] * f[1] - r[1] * f[0]};
    kernels::IsoCamera cam{};
    for (int i = 0; i < 3; i++) {
      cam.eye[size_t(i)] = float(-2.0 * f[i]);
      cam.right[size_t(i)] = float(r[i]);
      cam.up[size_t(i)] = float(u[i]);
      cam.forward[size_t(i)] = float(f[i]);
    }
    cam.half_extent = 0.72f;
    a.cameras.push_back(cam);
  }
  PreviewImage img;
  img.width = kernels::iso_image_width(a);
  img.height = kernels::iso_image_height(a);
  gpu::Buffer fb = dev.create_storage(std::max<uint64_t>(field.size() * 4, 16), "preview field");
  dev.upload(fb, field);
  gpu::Buffer ib = dev.create_storage(uint64_t(img.width) * img.height * 4, "preview image");
  a.field = &fb;
  a.image = &ib;
  auto d = kernels::iso_raymarch(kernels, a, "preview");
  gpu::Recorder rec(dev);
  d.record(rec);
  rec.submit();
  auto words = dev.download_as<uint32_t>(ib, 0, uint64_t(img.width) * img.height);
  img.rgba.resize(words.size() * 4);
  std::memcpy(img.rgba.data(), words.data(), img.rgba.size());  // pack4x8unorm: R in the low byte
  return img;
}

void write_preview_png(const std::filesystem::path& path, const PreviewImage& image) {
  formats::write_png(path, image.rgba, image.width, image.height);
}

}  // namespace ember::trellis
