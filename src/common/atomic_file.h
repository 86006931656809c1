// Outputs are written beside their destination under a temporary name and renamed into place,
// so a failed or interrupted run never leaves a half-written file or directory behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

#include "common/output_guard.h"

namespace ember {

// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename).
void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, const std::string& text);

// A file written in pieces (outputs too large to hold in memory at once) that appears at `path`
// only on commit(): a temporary file beside it, fsync, rename. Destroyed before commit(), it
// leaves nothing behind.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const uint8_t> bytes);                      // appends
  void write_at(uint64_t offset, std::span<const uint8_t> bytes);  // overwrites bytes already written
  uint64_t size() const { return size_; }
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::filesystem::path path_;
  TempPath temp_;  // removed on destruction before commit and on SIGINT/SIGTERM
  std::filesystem::path tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Builds a whole directory atomically: `fill` writes into a fresh temporary directory beside
// `dir`; on success it is renamed to `dir`, on any exception it is removed. An existing non-empty
// `dir` is an error (write_output_directory in output_guard.h has the rules and --force).
void build_directory_atomic(const std::filesystem::path& dir,
                            const std::function<void(const std::filesystem::path& tmp)>& fill);

// Reads a whole file, with a clear error naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace ember
