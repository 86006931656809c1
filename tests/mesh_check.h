// Independent readers for the asset tests: a GLB structural validator (glTF 2.0 essentials) that
// returns the mesh it holds, and the closed-manifold check of an indexed triangle mesh.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::test {

struct GlbContents {
  nlohmann::json json;
  std::vector<float> positions, normals;
  std::vector<uint32_t> indices;
};

inline uint32_t read_u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// Throws std::runtime_error naming the first violation.
inline GlbContents validate_glb(const std::vector<uint8_t>& b) {
  auto fail = [](const std::string& m) { throw std::runtime_error("GLB: " + m); };
  if (b.size() < 28) fail("shorter than a header and two chunk headers");
  if (read_u32(b, 0) != 0x46546C67) fail("magic is not glTF");
  if (read_u32(b, 4) != 2) fail("version is not 2");
  if (read_u32(b, 8) != b.size()) fail("header length differs from the file size");
  const uint32_t jlen = read_u32(b, 12);
  if (read_u32(b, 16) != 0x4E4F534A) fail("first chunk is not JSON");
  if (jlen % 4 || 20 + uint64_t(jlen) + 8 > b.size()) fail("JSON chunk length");
  GlbContents g;
  g.json = nlohmann::json::parse(std::string(b.begin() + 20, b.begin() + 20 + jlen));
  const size_t bin_at = 20 + jlen;
  const uint32_t blen = read_u32(b, bin_at);
  if (read_u32(b, bin_at + 4) != 0x004E4942) fail("second chunk is not BIN");
  if (blen % 4 || bin_at + 8 + uint64_t(blen) != b.size()) fail("BIN chunk length");
  const auto& j = g.json;
  if (j.at("asset").at("version") != "2.0") fail("asset.version is not 2.0");
  if (j.at("buffers").size() != 1 || j["buffers"][0].contains("uri")) fail("one buffer, the GLB BIN chunk");
  const uint64_t buffer_len = j["buffers"][0].at("byteLength");
  if (buffer_len > blen) fail("buffer longer than the BIN chunk");
  const int scene = j.at("scene");
  for (int n : j.at("scenes").at(size_t(scene)).at("nodes"))
    if (!j.at("nodes").at(size_t(n)).contains("mesh")) fail("scene node without a mesh");
  for (const auto& v : j.at("bufferViews"))
    if (uint64_t(v.value("byteOffset", 0)) + uint64_t(v.at("byteLength")) > buffer_len) fail("bufferView out of bounds");
  auto accessor = [&](int index, int component, const std::string& type, size_t width) {
    const auto& a = j.at("accessors").at(size_t(index));
    if (a.at("componentType") != component || a.at("type") != type) fail("accessor " + std::to_string(index) + " type");
    const auto& v = j["bufferViews"].at(size_t(a.at("bufferView").get<int>()));
    const uint64_t off = uint64_t(v.value("byteOffset", 0)) + uint64_t(a.value("byteOffset", 0));
    const uint64_t count = a.at("count");
    if (off % 4) fail("accessor not 4-byte aligned");
    if (off + count * width * 4 > uint64_t(v.value("byteOffset", 0)) + uint64_t(v.at("byteLength")))
      fail("accessor " + std::to_string(index) + " runs past its bufferView");
    std::vector<uint8_t> bytes(b.begin() + long(bin_at + 8 + off), b.begin() + long(bin_at + 8 + off + count * width * 4));
    return std::make_pair(bytes, a);
  };
  const auto& prim = j.at("meshes").at(0).at("primitives").at(0);
  if (prim.value("mode", 4) != 4) fail("primitive mode is not TRIANGLES");
  auto [pb, pa] = accessor(prim.at("attributes").at("POSITION"), 5126, "VEC3", 3);
  if (!pa.contains("min") || !pa.contains("max")) fail("POSITION accessor lacks min/max");
  g.positions.resize(pb.size() / 4);
  std::memcpy(g.positions.data(), pb.data(), pb.size());
  for (size_t i = 0; i < g.positions.size(); i++)
    if (g.positions[i] < pa["min"][i % 3].get<float>() || g.positions[i] > pa["max"][i % 3].get<float>()) fail("POSITION outside min/max");
  auto [nb, na] = accessor(prim.at("attributes").at("NORMAL"), 5126, "VEC3", 3);
  if (na.at("count") != pa.at("count")) fail("NORMAL count differs from POSITION");
  g.normals.resize(nb.size() / 4);
  std::memcpy(g.normals.data(), nb.data(), nb.size());
  auto [ib, ia] = accessor(prim.at("indices"), 5125, "SCALAR", 1);
  g.indices.resize(ib.size() / 4);
  std::memcpy(g.indices.data(), ib.data(), ib.size());
  if (g.indices.size() % 3) fail("index count not a multiple of 3");
  for (uint32_t i : g.indices)
    if (i >= g.positions.size() / 3) fail("index out of range");
  return g;
}

// Every undirected edge in exactly two triangles, as opposite directed edges (consistent winding),
// and no degenerate index triple. Returns "" or the first problem.
inline std::string closed_manifold_problem(const std::vector<uint32_t>& idx) {
  std::map<std::pair<uint32_t, uint32_t>, int> directed;
  for (size_t t = 0; t < idx.size(); t += 3) {
    const uint32_t v[3] = {idx[t], idx[t + 1], idx[t + 2]};
    if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2]) return "triangle " + std::to_string(t / 3) + " repeats a vertex";
    for (int e = 0; e < 3; e++) directed[{v[e], v[(e + 1) % 3]}]++;
  }
  for (const auto& [e, n] : directed) {
    if (n != 1) return "directed edge " + std::to_string(e.first) + "->" + std::to_string(e.second) + " used " + std::to_string(n) + " times";
    if (!directed.count({e.second, e.first})) return "edge " + std::to_string(e.first) + "-" + std::to_string(e.second) + " on one triangle only";
  }
  return "";
}

}  // namespace ember::test
