// The ss-flow stage's host tensors in files: the text context in (.npy, f32 or f16) and the latent
// out (.npy, f32), with the checks a user's file needs. A small self-contained .npy subset (C order,
// little-endian); to be served by src/formats/npy.h once that lands.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ember::trellis {

struct NpyArray {
  std::vector<int64_t> shape;
  std::string descr;  // "<f4", "<f2"
  std::vector<float> values;
};

// Reads a .npy of f32 or f16 (converted to f32). Errors name the file and what is wrong.
NpyArray read_npy(const std::filesystem::path& path);
// Writes f32 values with `shape` atomically.
void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<float>& values);

// A context tensor [tokens][channels] (or [1][tokens][channels]): shape, dtype and finiteness
// checked; `what` names the option it came from ("--cond").
std::vector<float> read_context(const std::filesystem::path& path, int64_t tokens, int64_t channels, const std::string& what);
// A latent [channels][R][R][R] (or with a leading 1), finite.
std::vector<float> read_latent(const std::filesystem::path& path, int64_t channels, int64_t resolution, const std::string& what);

}  // namespace ember::trellis
