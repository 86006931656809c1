// The decoded occupancy as files a user opens: GLB (the iso-surface mesh), PLY (occupied voxel
// centres) and a PNG preview rendered on the GPU. Each written atomically.
#pragma once

#include <array>
#include <filesystem>
#include <span>

#include "gpu/kernel.h"

namespace ember::trellis {

struct AssetPaths {
  std::filesystem::path glb, ply, preview;  // empty: not written
};

struct AssetReport {
  size_t vertices = 0, triangles = 0, points = 0;
};

AssetReport write_assets(gpu::KernelCache& kernels, std::span<const float> logits, std::array<uint32_t, 3> extent,
                         const AssetPaths& paths, uint32_t preview_view = 256);

}  // namespace ember::trellis
