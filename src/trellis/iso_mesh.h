// The occupied region of a dense scalar grid (the decoder's logits, occupied where > 0) as a closed
// triangle mesh, and the occupied cells' centres, in the asset's unit box.
//
// Grid convention (upstream: coords = argwhere(logits > 0), a voxel's centre at
// (index + 0.5) / resolution - 0.5 per axis, z up): sample (i, j, k) of a [n0][n1][n2] grid sits at
// x = (i + 0.5) / n0 - 0.5, y = (j + 0.5) / n1 - 0.5, z = (k + 0.5) / n2 - 0.5. Outputs are turned
// to glTF's y-up frame as upstream's GLB export does: (x, y, z) -> (x, z, -y).
//
// The surface: marching tetrahedra over the grid (each cell split into the 6 tetrahedra along its
// main diagonal, the same way in every cell, so faces of neighbouring cells match), vertices where
// the linear interpolation along a tetrahedron edge crosses the iso value, one vertex per grid edge
// shared by every triangle using it. The grid is bordered by one layer of "outside" values, so the
// mesh is closed, and every edge belongs to exactly two triangles. Normals: the field's gradient
// (central differences) interpolated at each vertex, pointing out of the occupied region.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace ember::trellis {

struct TriangleMesh {
  std::vector<float> positions;  // xyz per vertex
  std::vector<float> normals;    // unit xyz per vertex
  std::vector<uint32_t> indices; // counter-clockwise seen from outside
  size_t vertices() const { return positions.size() / 3; }
  size_t triangles() const { return indices.size() / 3; }
};

// field: [n0][n1][n2] row-major; occupied where value > iso.
TriangleMesh iso_surface(std::span<const float> field, std::array<uint32_t, 3> n, float iso = 0.0f);

// Centres of the samples with value > iso (same frame as the mesh), xyz per point.
std::vector<float> occupied_centres(std::span<const float> field, std::array<uint32_t, 3> n, float iso = 0.0f);

}  // namespace ember::trellis
