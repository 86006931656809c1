// Outputs are written beside their destination under a temporary name and renamed into place,
// so a failed or interrupted run never leaves a half-written file or directory behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

namespace ember {

// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename).
void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, const std::string& text);

// Builds a whole directory atomically: `fill` writes into a fresh temporary directory beside
// `dir`; on success that directory replaces `dir`, on any exception it is removed.
void build_directory_atomic(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path& tmp)>& fill);

// Reads a whole file, with a clear error naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace ember
