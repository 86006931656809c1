#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "common/error.h"

namespace ember {
namespace fs = std::filesystem;

namespace {
std::string unique_suffix() {
  std::random_device rd;
  char buf[32];
  snprintf(buf, sizeof buf, ".tmp-%d-%08x", static_cast<int>(getpid()), rd());
  return buf;
}
}  // namespace

void write_file_atomic(const fs::path& path, std::span<const uint8_t> bytes) {
  fs::path tmp = path;
  tmp += unique_suffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(std::string("cannot create file: ") + strerror(errno), tmp.string(), "check that the directory exists and is writable");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      int e = errno;
      ::close(fd);
      fs::remove(tmp);
      throw Error(std::string("write failed: ") + strerror(e), tmp.string(), "check free disk space");
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw Error("cannot move output into place: " + ec.message(), path.string());
  }
}

void write_file_atomic(const fs::path& path, const std::string& text) {
  write_file_atomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void build_directory_atomic(const fs::path& dir, const std::function<void(const fs::path&)>& fill) {
  fs::path target = fs::absolute(dir);
  fs::path parent = target.parent_path();
  if (!parent.empty() && !fs::exists(parent)) fs::create_directories(parent);
  fs::path tmp = target;
  tmp += unique_suffix();
  fs::create_directories(tmp);
  try {
    fill(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  // Replace an existing output only after the new one is complete.
  std::error_code ec;
  fs::path old;
  if (fs::exists(target)) {
    old = target;
    old += unique_suffix() + ".old";
    fs::rename(target, old, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      throw Error("cannot replace existing output", target.string(), "remove it or choose another --out");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
    if (!old.empty()) fs::rename(old, target, ignore);
    throw Error("cannot move output into place: " + ec.message(), target.string());
  }
  if (!old.empty()) fs::remove_all(old, ec);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path.string(), "check the path");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ember
