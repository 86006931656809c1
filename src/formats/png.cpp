#include "formats/png.h"

#include "common/atomic_file.h"
#include "common/error.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>

namespace ember::formats {

std::vector<uint8_t> png_bytes(std::span<const uint8_t> rgba, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || rgba.size() != size_t(width) * height * 4) throw Error("image size mismatch", "png");
  std::vector<uint8_t> out;
  auto sink = [](void* ctx, void* data, int size) {
    auto* v = static_cast<std::vector<uint8_t>*>(ctx);
    const auto* b = static_cast<const uint8_t*>(data);
    v->insert(v->end(), b, b + size);
  };
  if (!stbi_write_png_to_func(sink, &out, int(width), int(height), 4, rgba.data(), int(width * 4)))
    throw Error("PNG encoding failed", "png");
  return out;
}

void write_png(const std::filesystem::path& path, std::span<const uint8_t> rgba, uint32_t width, uint32_t height) {
  write_file_atomic(path, png_bytes(rgba, width, height));
}

}  // namespace ember::formats
