// A point cloud as PLY (binary little-endian, float x y z per vertex), written atomically.
#pragma once

#include <filesystem>
#include <span>
#include <string>

namespace ember::formats {

void write_point_ply(const std::filesystem::path& path, std::span<const float> xyz, const std::string& comment = "");

}  // namespace ember::formats
