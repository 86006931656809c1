#include "formats/ply.h"

#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"

namespace ember::formats {

void write_point_ply(const std::filesystem::path& path, std::span<const float> xyz, const std::string& comment) {
  if (xyz.size() % 3) throw Error("point coordinates are not triples", path.string());
  if (comment.find('\n') != std::string::npos) throw Error("a PLY comment is one line", path.string());
  std::string header = "ply\nformat binary_little_endian 1.0\n";
  if (!comment.empty()) header += "comment " + comment + "\n";
  header += "element vertex " + std::to_string(xyz.size() / 3) + "\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
  std::vector<uint8_t> out;
  out.reserve(header.size() + xyz.size() * 4);
  out.insert(out.end(), header.begin(), header.end());
  const auto* data = reinterpret_cast<const uint8_t*>(xyz.data());
  out.insert(out.end(), data, data + xyz.size() * 4);
  write_file_atomic(path, out);
}

}  // namespace ember::formats
