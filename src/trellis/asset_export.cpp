#include "trellis/asset_export.h"

#include "formats/glb.h"
#include "formats/ply.h"
#include "trellis/iso_mesh.h"
#include "trellis/preview.h"

namespace ember::trellis {

AssetReport write_assets(gpu::KernelCache& kernels, std::span<const float> logits, std::array<uint32_t, 3> extent,
                         const AssetPaths& paths, uint32_t preview_view) {
  AssetReport r;
  if (!paths.glb.empty()) {
    const TriangleMesh m = iso_surface(logits, extent);
    formats::write_glb(paths.glb, {m.positions, m.normals, m.indices, "occupancy", "ember text-to-3d"});
    r.vertices = m.vertices();
    r.triangles = m.triangles();
  }
  if (!paths.ply.empty()) {
    const auto pts = occupied_centres(logits, extent);
    formats::write_point_ply(paths.ply, pts, "ember: occupied voxel centres (logits > 0), y up");
    r.points = pts.size() / 3;
  }
  if (!paths.preview.empty()) write_preview_png(paths.preview, render_preview(kernels, logits, extent, preview_view));
  return r;
}

}  // namespace ember::trellis
