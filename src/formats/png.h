// RGBA8 images as PNG (stb_image_write from Debian's libstb-dev), written atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace ember::formats {

std::vector<uint8_t> png_bytes(std::span<const uint8_t> rgba, uint32_t width, uint32_t height);
void write_png(const std::filesystem::path& path, std::span<const uint8_t> rgba, uint32_t width, uint32_t height);

}  // namespace ember::formats
