#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace ember {
namespace fs = std::filesystem;

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)), temp_(path_), tmp_(temp_.path()) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(std::string("cannot create file: ") + strerror(errno), tmp_.string(), "check that the directory exists and is writable");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);  // ~TempPath removes an uncommitted file
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  ::close(fd_);
  fd_ = -1;
  throw Error(what + ": " + strerror(err), tmp_.string(), "check free disk space");
}

void AtomicFileWriter::write_at(uint64_t offset, std::span<const uint8_t> bytes) {
  if (fd_ < 0) throw Error("internal: write after commit", path_.string());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) fail("write failed", errno);
    done += static_cast<size_t>(n);
  }
  size_ = std::max(size_, offset + bytes.size());
}

void AtomicFileWriter::write(std::span<const uint8_t> bytes) { write_at(size_, bytes); }

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw Error("internal: commit twice", path_.string());
  ::fsync(fd_);
  ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) throw Error("cannot move output into place: " + ec.message(), path_.string());
  temp_.release();
}

void write_file_atomic(const fs::path& path, std::span<const uint8_t> bytes) {
  AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

void write_file_atomic(const fs::path& path, const std::string& text) {
  write_file_atomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void build_directory_atomic(const fs::path& dir, const std::function<void(const fs::path&)>& fill) {
  write_output_directory(OutputTarget(dir), fill);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path.string(), "check the path");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ember
