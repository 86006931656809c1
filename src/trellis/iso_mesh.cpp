#include "trellis/iso_mesh.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/error.h"

namespace ember::trellis {
namespace {

struct Grid {
  std::span<const float> f;
  int64_t n0, n1, n2;
  float outside;
  // Padded coordinates: sample (i, j, k) of the field is (i + 1, j + 1, k + 1); the border is outside.
  float at(int64_t i, int64_t j, int64_t k) const {
    i--, j--, k--;
    if (i < 0 || j < 0 || k < 0 || i >= n0 || j >= n1 || k >= n2) return outside;
    return f[size_t((i * n1 + j) * n2 + k)];
  }
  std::array<double, 3> gradient(int64_t i, int64_t j, int64_t k) const {
    return {0.5 * (double(at(i + 1, j, k)) - at(i - 1, j, k)), 0.5 * (double(at(i, j + 1, k)) - at(i, j - 1, k)),
            0.5 * (double(at(i, j, k + 1)) - at(i, j, k - 1))};
  }
};

using Vec = std::array<double, 3>;
Vec sub(const Vec& a, const Vec& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Vec cross(const Vec& a, const Vec& b) { return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}; }
double dot(const Vec& a, const Vec& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// Grid coordinates -> the unit box, y-up.
std::array<float, 3> to_asset(const Vec& g, int64_t n0, int64_t n1, int64_t n2) {
  auto axis = [](double v, int64_t n) { return float(std::clamp((v + 0.5) / double(n) - 0.5, -0.5, 0.5)); };
  const float x = axis(g[0], n0), y = axis(g[1], n1), z = axis(g[2], n2);
  return {x, z, -y};
}

}  // namespace

TriangleMesh iso_surface(std::span<const float> field, std::array<uint32_t, 3> n, float iso) {
  const int64_t n0 = n[0], n1 = n[1], n2 = n[2];
  if (n0 < 1 || n1 < 1 || n2 < 1 || int64_t(field.size()) != n0 * n1 * n2)
    throw Error("grid of " + std::to_string(field.size()) + " values is not " + std::to_string(n0) + "x" + std::to_string(n1) + "x" +
                    std::to_string(n2),
                "iso_surface");
  const Grid g{field, n0, n1, n2, iso - 1.0f};
  const int64_t p0 = n0 + 2, p1 = n1 + 2, p2 = n2 + 2;  // padded extents
  TriangleMesh mesh;
  std::unordered_map<uint64_t, uint32_t> vertex_of_edge;
  // The vertex on the edge from padded sample P to P + offset (offset a 0/1 vector, code bits x|y<<1|z<<2).
  auto vertex = [&](int64_t i, int64_t j, int64_t k, int code) -> uint32_t {
    const uint64_t key = uint64_t((i * p1 + j) * p2 + k) * 8 + uint64_t(code);
    auto it = vertex_of_edge.find(key);
    if (it != vertex_of_edge.end()) return it->second;
    const int64_t di = code & 1, dj = (code >> 1) & 1, dk = (code >> 2) & 1;
    const double a = g.at(i, j, k), b = g.at(i + di, j + dj, k + dk);
    const double t = (double(iso) - a) / (b - a);
    const Vec pos{i - 1 + t * double(di), j - 1 + t * double(dj), k - 1 + t * double(dk)};
    const Vec ga = g.gradient(i, j, k), gb = g.gradient(i + di, j + dj, k + dk);
    // The gradient in unit-box coordinates (a grid step is 1/n of the box), pointing outward (down the field).
    const Vec nrm{-((1 - t) * ga[0] + t * gb[0]) * double(n0), -((1 - t) * ga[1] + t * gb[1]) * double(n1),
            -((1 - t) * ga[2] + t * gb[2]) * double(n2)};
    const double len = std::sqrt(dot(nrm, nrm));  // 0: fixed up from the faces below
    const uint32_t id = uint32_t(mesh.vertices());
    auto p = to_asset(pos, n0, n1, n2);
    mesh.positions.insert(mesh.positions.end(), p.begin(), p.end());
    if (len > 0) {
      mesh.normals.insert(mesh.normals.end(), {float(nrm[0] / len), float(nrm[2] / len), float(-nrm[1] / len)});
    } else {
      mesh.normals.insert(mesh.normals.end(), {0.0f, 0.0f, 0.0f});
    }
    vertex_of_edge.emplace(key, id);
    return id;
  };
  static constexpr int kPerms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int64_t i = 0; i + 1 < p0; i++)
    for (int64_t j = 0; j + 1 < p1; j++)
      for (int64_t k = 0; k + 1 < p2; k++) {
        float v[8];
        int inside = 0;
        for (int c = 0; c < 8; c++) {
          v[c] = g.at(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
          inside += v[c] > iso;
        }
        if (inside == 0 || inside == 8) continue;
        for (const auto& perm : kPerms) {
          const int t[4] = {0, 1 << perm[0], (1 << perm[0]) | (1 << perm[1]), 7};
          int in[4], out[4], ni = 0, no = 0;
          for (int q = 0; q < 4; q++) (v[t[q]] > iso ? in[ni++] : out[no++]) = t[q];
          if (ni == 0 || no == 0) continue;
          // The vertex on the tetrahedron edge between corners a and b (the lower code is the base).
          auto edge = [&](int a, int b) {
            const int lo = std::min(a, b), hi = std::max(a, b);
            return vertex(i + (lo & 1), j + ((lo >> 1) & 1), k + ((lo >> 2) & 1), hi ^ lo);
          };
          // Corner positions for orienting: triangles face from the inside corners to the outside ones.
          auto corner = [&](int c) { return Vec{double(c & 1), double((c >> 1) & 1), double((c >> 2) & 1)}; };
          Vec cin{0, 0, 0}, cout{0, 0, 0};
          for (int q = 0; q < ni; q++)
            for (int a = 0; a < 3; a++) cin[size_t(a)] += corner(in[q])[size_t(a)] / ni;
          for (int q = 0; q < no; q++)
            for (int a = 0; a < 3; a++) cout[size_t(a)] += corner(out[q])[size_t(a)] / no;
          const Vec dir = sub(cout, cin);
          auto mid = [&](int a, int b) {
            Vec m;
            for (int x = 0; x < 3; x++) m[size_t(x)] = 0.5 * (corner(a)[size_t(x)] + corner(b)[size_t(x)]);
            return m;
          };
          auto emit = [&](std::array<int, 2> e0, std::array<int, 2> e1, std::array<int, 2> e2) {
            uint32_t a = edge(e0[0], e0[1]), b = edge(e1[0], e1[1]), c = edge(e2[0], e2[1]);
            const Vec m0 = mid(e0[0], e0[1]), m1 = mid(e1[0], e1[1]), m2 = mid(e2[0], e2[1]);
            if (dot(cross(sub(m1, m0), sub(m2, m0)), dir) < 0) std::swap(b, c);
            mesh.indices.insert(mesh.indices.end(), {a, b, c});
          };
          if (ni == 1) {
            emit({in[0], out[0]}, {in[0], out[1]}, {in[0], out[2]});
          } else if (no == 1) {
            emit({in[0], out[0]}, {in[1], out[0]}, {in[2], out[0]});
          } else {  // two in (A, B), two out (C, D): the quad AC, AD, BD, BC
            const int A = in[0], B = in[1], C = out[0], D = out[1];
            emit({A, C}, {A, D}, {B, D});
            emit({A, C}, {B, D}, {B, C});
          }
        }
      }
  // Vertices whose field gradient vanished: the area-weighted normal of their triangles.
  std::vector<double> acc;
  for (size_t vi = 0; vi < mesh.vertices(); vi++)
    if (mesh.normals[3 * vi] == 0 && mesh.normals[3 * vi + 1] == 0 && mesh.normals[3 * vi + 2] == 0) {
      if (acc.empty()) {
        acc.assign(mesh.positions.size(), 0.0);
        for (size_t t = 0; t < mesh.indices.size(); t += 3) {
          Vec p[3];
          for (int q = 0; q < 3; q++)
            for (int a = 0; a < 3; a++) p[q][size_t(a)] = mesh.positions[3 * mesh.indices[t + size_t(q)] + size_t(a)];
          const Vec f = cross(sub(p[1], p[0]), sub(p[2], p[0]));
          for (int q = 0; q < 3; q++)
            for (int a = 0; a < 3; a++) acc[3 * mesh.indices[t + size_t(q)] + size_t(a)] += f[size_t(a)];
        }
      }
      const Vec f{acc[3 * vi], acc[3 * vi + 1], acc[3 * vi + 2]};
      const double len = std::sqrt(dot(f, f));
      for (int a = 0; a < 3; a++) mesh.normals[3 * vi + size_t(a)] = len > 0 ? float(f[size_t(a)] / len) : (a == 1 ? 1.0f : 0.0f);
    }
  return mesh;
}

std::vector<float> occupied_centres(std::span<const float> field, std::array<uint32_t, 3> n, float iso) {
  if (int64_t(field.size()) != int64_t(n[0]) * n[1] * n[2]) throw Error("grid size mismatch", "occupied_centres");
  std::vector<float> pts;
  for (int64_t i = 0; i < n[0]; i++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t k = 0; k < n[2]; k++)
        if (field[size_t((i * n[1] + j) * n[2] + k)] > iso) {
          auto p = to_asset({double(i), double(j), double(k)}, n[0], n[1], n[2]);
          pts.insert(pts.end(), p.begin(), p.end());
        }
  return pts;
}

}  // namespace ember::trellis
