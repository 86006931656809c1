// The asset outputs: the iso-surface mesh of an occupancy grid (closed, manifold, outward), its GLB
// (structurally valid glTF 2.0), the PLY point cloud, and the GPU preview (silhouette of a sphere).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "formats/glb.h"
#include "formats/png.h"
#include "formats/ply.h"
#include "gpu_fixture.h"
#include "mesh_check.h"
#include "trellis/iso_mesh.h"
#include "trellis/preview.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

using namespace ember;

namespace {

// Logits of a sphere of radius r (unit box) centred at c: positive inside, about the signed distance
// in voxels.
std::vector<float> sphere(uint32_t n, double r, std::array<double, 3> c = {0, 0, 0}) {
  std::vector<float> f(size_t(n) * n * n);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++)
      for (uint32_t k = 0; k < n; k++) {
        const double x = (i + 0.5) / n - 0.5 - c[0], y = (j + 0.5) / n - 0.5 - c[1], z = (k + 0.5) / n - 0.5 - c[2];
        f[(size_t(i) * n + j) * n + k] = float((r - std::sqrt(x * x + y * y + z * z)) * n);
      }
  return f;
}

}  // namespace

TEST(IsoMesh, SphereIsClosedManifoldOutwardAndRound) {
  const uint32_t n = 32;
  const double r = 0.3;
  auto m = trellis::iso_surface(sphere(n, r), {n, n, n});
  ASSERT_GT(m.triangles(), 1000u);
  EXPECT_EQ(test::closed_manifold_problem(m.indices), "");
  for (size_t v = 0; v < m.vertices(); v++) {
    const float* p = &m.positions[3 * v];
    const float* q = &m.normals[3 * v];
    const double len = std::sqrt(double(p[0]) * p[0] + double(p[1]) * p[1] + double(p[2]) * p[2]);
    EXPECT_NEAR(len, r, 0.5 / n) << v;
    EXPECT_NEAR(std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]), 1.0, 1e-4);
    EXPECT_GT((p[0] * q[0] + p[1] * q[1] + p[2] * q[2]) / len, 0.9) << "normal not outward at " << v;
  }
  // Winding: counter-clockwise from outside, so each face normal points away from the centre.
  for (size_t t = 0; t < m.indices.size(); t += 3) {
    const float *a = &m.positions[3 * m.indices[t]], *b = &m.positions[3 * m.indices[t + 1]], *c = &m.positions[3 * m.indices[t + 2]];
    const double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    const double nx = u[1] * w[2] - u[2] * w[1], ny = u[2] * w[0] - u[0] * w[2], nz = u[0] * w[1] - u[1] * w[0];
    EXPECT_GE(nx * (a[0] + b[0] + c[0]) + ny * (a[1] + b[1] + c[1]) + nz * (a[2] + b[2] + c[2]), -1e-9) << t / 3;
  }
}

TEST(IsoMesh, NoiseAndBorderTouchingShapesStayClosed) {
  // Random logits (the shape of a random-weight decoder) and a region cut by the grid's border.
  const uint32_t n = 12;
  auto noise = test::random_floats(size_t(n) * n * n, 4);
  auto m = trellis::iso_surface(noise, {n, n, n});
  EXPECT_GT(m.triangles(), 100u);
  EXPECT_EQ(test::closed_manifold_problem(m.indices), "");
  auto cut = trellis::iso_surface(sphere(n, 0.4, {0.3, 0.0, -0.2}), {n, n, n});
  EXPECT_EQ(test::closed_manifold_problem(cut.indices), "");
  for (float p : cut.positions) EXPECT_LE(std::fabs(p), 0.5f);
  EXPECT_EQ(trellis::iso_surface(std::vector<float>(27, -1.0f), {3, 3, 3}).triangles(), 0u);
}

TEST(IsoMesh, FrameIsUpstreamGridTurnedYUp) {
  // One occupied sample at grid (i, j, k) = (3, 0, 0) of 4^3: its centre is x = 0.375, y = z = -0.375
  // in upstream's z-up frame, (0.375, -0.375, 0.375) after (x, y, z) -> (x, z, -y).
  std::vector<float> f(64, -1.0f);
  f[3 * 16] = 1.0f;
  auto c = trellis::occupied_centres(f, {4, 4, 4});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_FLOAT_EQ(c[0], 0.375f);
  EXPECT_FLOAT_EQ(c[1], -0.375f);
  EXPECT_FLOAT_EQ(c[2], 0.375f);
  auto m = trellis::iso_surface(f, {4, 4, 4});
  double mean[3] = {0, 0, 0};
  for (size_t v = 0; v < m.vertices(); v++)
    for (int a = 0; a < 3; a++) mean[a] += m.positions[3 * v + size_t(a)] / double(m.vertices());
  EXPECT_NEAR(mean[0], 0.375, 0.05);
  EXPECT_NEAR(mean[1], -0.375, 0.05);
  EXPECT_NEAR(mean[2], 0.375, 0.05);
}

TEST(Glb, SphereMeshPassesStructuralValidation) {
  const uint32_t n = 24;
  auto m = trellis::iso_surface(sphere(n, 0.35), {n, n, n});
  auto bytes = formats::glb_bytes({m.positions, m.normals, m.indices});
  auto g = test::validate_glb(bytes);
  EXPECT_EQ(g.positions, m.positions);
  EXPECT_EQ(g.normals, m.normals);
  EXPECT_EQ(g.indices, m.indices);
  EXPECT_EQ(test::closed_manifold_problem(g.indices), "");
  // Damage is caught by the validator (so the test above can fail).
  auto bad = bytes;
  bad[8] ^= 1;
  EXPECT_THROW(test::validate_glb(bad), std::runtime_error);
  std::vector<uint32_t> idx = m.indices;
  idx[5] = uint32_t(m.vertices());
  EXPECT_THROW(formats::glb_bytes({m.positions, m.normals, idx}), std::exception);
}

TEST(Ply, PointCloudHeaderAndData) {
  const auto path = std::filesystem::temp_directory_path() / ("ember_points_" + std::to_string(::getpid()) + ".ply");
  std::vector<float> pts{0.1f, 0.2f, 0.3f, -0.4f, 0.5f, -0.5f};
  formats::write_point_ply(path, pts, "test");
  std::string s = read_file(path);
  const std::string header = "ply\nformat binary_little_endian 1.0\ncomment test\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
  ASSERT_EQ(s.substr(0, header.size()), header);
  ASSERT_EQ(s.size(), header.size() + 24);
  std::vector<float> back(6);
  std::memcpy(back.data(), s.data() + header.size(), 24);
  EXPECT_EQ(back, pts);
  std::filesystem::remove(path);
}

TEST(Preview, SphereSilhouetteInEveryView) {
  const uint32_t n = 32, view = 64;
  const double r = 0.3;
  auto img = trellis::render_preview(test::test_kernels(), sphere(n, r), {n, n, n}, view);
  ASSERT_EQ(img.width, 2 * view);
  ASSERT_EQ(img.height, 2 * view);
  auto png = formats::png_bytes(img.rgba, img.width, img.height);
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load_from_memory(png.data(), int(png.size()), &w, &h, &ch, 4);
  ASSERT_NE(px, nullptr);
  ASSERT_EQ(w, int(2 * view));
  ASSERT_EQ(h, int(2 * view));
  // An orthographic view of a sphere is a disc of radius r around the view's centre (the view spans
  // 2 x 0.72 box units): covered well inside, background well outside.
  const double px_per_unit = view / (2 * 0.72);
  const unsigned char* bg = px;  // the top-left corner is background
  size_t inside_bad = 0, outside_bad = 0, inside = 0, outside = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const double cx = (x % view) + 0.5 - view / 2.0, cy = (y % view) + 0.5 - view / 2.0;
      const double d = std::sqrt(cx * cx + cy * cy) / px_per_unit;
      const unsigned char* p = px + 4 * (size_t(y) * size_t(w) + size_t(x));
      const bool is_bg = std::memcmp(p, bg, 3) == 0;
      if (d < 0.85 * r) inside++, inside_bad += is_bg;
      if (d > 1.15 * r) outside++, outside_bad += !is_bg;
    }
  stbi_image_free(px);
  EXPECT_GT(inside, 4 * 200u);
  EXPECT_EQ(inside_bad, 0u);
  EXPECT_EQ(outside_bad, 0u);
}
