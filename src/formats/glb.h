// glTF 2.0 binary (.glb) of one indexed triangle mesh: a 12-byte header ("glTF", version 2, total
// length), a JSON chunk (space-padded to 4 bytes) and a BIN chunk (zero-padded) holding POSITION
// (VEC3 f32, with the min/max glTF requires), NORMAL (VEC3 f32) and the indices (SCALAR u32), one
// bufferView each, one mesh, node and scene. Written atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace ember::formats {

struct GlbMesh {
  std::span<const float> positions;  // xyz per vertex
  std::span<const float> normals;    // xyz per vertex (unit)
  std::span<const uint32_t> indices; // triangles
  std::string name = "mesh";
  std::string generator = "ember";
};

std::vector<uint8_t> glb_bytes(const GlbMesh& mesh);
void write_glb(const std::filesystem::path& path, const GlbMesh& mesh);

}  // namespace ember::formats
