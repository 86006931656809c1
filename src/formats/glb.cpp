#include "formats/glb.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"

namespace ember::formats {
namespace {

constexpr uint32_t kMagic = 0x46546C67;      // "glTF"
constexpr uint32_t kChunkJson = 0x4E4F534A;  // "JSON"
constexpr uint32_t kChunkBin = 0x004E4942;   // "BIN\0"
constexpr int kFloat = 5126, kUnsignedInt = 5125, kArrayBuffer = 34962, kElementArrayBuffer = 34963, kTriangles = 4;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace

std::vector<uint8_t> glb_bytes(const GlbMesh& m) {
  const size_t nv = m.positions.size() / 3;
  if (m.positions.size() % 3 || m.normals.size() != m.positions.size() || m.indices.size() % 3)
    throw Error("positions, normals and indices disagree in size", "glb");
  for (uint32_t i : m.indices)
    if (i >= nv) throw Error("index " + std::to_string(i) + " out of range for " + std::to_string(nv) + " vertices", "glb");
  std::vector<float> lo(3, std::numeric_limits<float>::max()), hi(3, std::numeric_limits<float>::lowest());
  for (size_t v = 0; v < nv; v++)
    for (size_t a = 0; a < 3; a++) {
      lo[a] = std::min(lo[a], m.positions[3 * v + a]);
      hi[a] = std::max(hi[a], m.positions[3 * v + a]);
    }
  if (nv == 0) lo = hi = {0, 0, 0};
  const uint64_t pos_bytes = m.positions.size() * 4, nrm_bytes = m.normals.size() * 4, idx_bytes = m.indices.size() * 4;
  const uint64_t bin_bytes = pos_bytes + nrm_bytes + idx_bytes;  // every part a multiple of 4
  if (bin_bytes > 0xffffffffull - 4096) throw Error("mesh too large for one GLB buffer", "glb");
  nlohmann::json j;
  j["asset"] = {{"version", "2.0"}, {"generator", m.generator}};
  j["scene"] = 0;
  j["scenes"] = nlohmann::json::array({{{"nodes", {0}}}});
  j["nodes"] = nlohmann::json::array({{{"mesh", 0}, {"name", m.name}}});
  nlohmann::json prim = {{"attributes", {{"POSITION", 0}, {"NORMAL", 1}}}, {"mode", kTriangles}};
  if (!m.indices.empty()) prim["indices"] = 2;
  j["meshes"] = nlohmann::json::array({{{"name", m.name}, {"primitives", {prim}}}});
  j["buffers"] = nlohmann::json::array({{{"byteLength", bin_bytes}}});
  j["bufferViews"] = nlohmann::json::array({{{"buffer", 0}, {"byteOffset", 0}, {"byteLength", pos_bytes}, {"target", kArrayBuffer}},
                                            {{"buffer", 0}, {"byteOffset", pos_bytes}, {"byteLength", nrm_bytes}, {"target", kArrayBuffer}}});
  j["accessors"] = nlohmann::json::array(
      {{{"bufferView", 0}, {"componentType", kFloat}, {"count", nv}, {"type", "VEC3"}, {"min", lo}, {"max", hi}},
       {{"bufferView", 1}, {"componentType", kFloat}, {"count", nv}, {"type", "VEC3"}}});
  if (!m.indices.empty()) {
    j["bufferViews"].push_back(
        {{"buffer", 0}, {"byteOffset", pos_bytes + nrm_bytes}, {"byteLength", idx_bytes}, {"target", kElementArrayBuffer}});
    j["accessors"].push_back({{"bufferView", 2}, {"componentType", kUnsignedInt}, {"count", m.indices.size()}, {"type", "SCALAR"}});
  }
  std::string text = j.dump();
  while (text.size() % 4) text.push_back(' ');
  std::vector<uint8_t> out;
  out.reserve(12 + 8 + text.size() + 8 + bin_bytes);
  put_u32(out, kMagic);
  put_u32(out, 2);
  put_u32(out, uint32_t(12 + 8 + text.size() + 8 + bin_bytes));
  put_u32(out, uint32_t(text.size()));
  put_u32(out, kChunkJson);
  put_bytes(out, text.data(), text.size());
  put_u32(out, uint32_t(bin_bytes));
  put_u32(out, kChunkBin);
  put_bytes(out, m.positions.data(), pos_bytes);
  put_bytes(out, m.normals.data(), nrm_bytes);
  put_bytes(out, m.indices.data(), idx_bytes);
  return out;
}

void write_glb(const std::filesystem::path& path, const GlbMesh& mesh) { write_file_atomic(path, glb_bytes(mesh)); }

}  // namespace ember::formats
