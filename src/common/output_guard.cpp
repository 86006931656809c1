#include "common/output_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <regex>

#include "common/error.h"

namespace ember {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTempTag = ".ember-tmp-";

// ---- temporaries removed on signals ----
// The handler may only use async-signal-safe calls: the paths sit in fixed buffers, and a
// directory is emptied with getdents64/unlinkat/rmdir.

constexpr int kSlots = 16;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 registered
  char path[4096];
};
std::array<Slot, kSlots> g_slots;
std::atomic<bool> g_handlers_installed{false};
struct sigaction g_previous[3];
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void remove_contents(int dir, int depth) {
  alignas(8) char buf[4096];
  bool removed = true;
  while (removed) {  // entries removed while listing may hide others: list again until a pass removes nothing
    removed = false;
    lseek(dir, 0, SEEK_SET);
    long n;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
      for (long off = 0; off < n;) {
        auto* d = reinterpret_cast<struct dirent64*>(buf + off);  // the kernel's linux_dirent64 layout
        off += d->d_reclen;
        if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
        if (unlinkat(dir, d->d_name, 0) == 0) {
          removed = true;
          continue;
        }
        if (depth >= 16) continue;
        int sub = openat(dir, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        remove_contents(sub, depth + 1);
        close(sub);
        if (unlinkat(dir, d->d_name, AT_REMOVEDIR) == 0) removed = true;
      }
    }
  }
}

void remove_tree_signal_safe(const char* path) {
  if (unlink(path) == 0) return;
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  remove_contents(dir, 0);
  close(dir);
  rmdir(path);
}

void on_signal(int sig) {
  for (auto& s : g_slots)
    if (s.state.load() == 2) remove_tree_signal_safe(s.path);
  // Then what would have happened without us (usually: the process ends by this signal).
  for (int i = 0; i < 3; i++)
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  raise(sig);
}

void install_handlers() {
  if (g_handlers_installed.exchange(true)) return;
  for (int i = 0; i < 3; i++) {
    struct sigaction sa {};
    sigaction(kSignals[i], nullptr, &g_previous[i]);
    if (g_previous[i].sa_handler == SIG_IGN) continue;  // e.g. nohup: keep ignoring
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, nullptr);
  }
}

std::string temp_suffix() {
  char buf[48];
  snprintf(buf, sizeof buf, "%s%d-%08x", kTempTag, static_cast<int>(getpid()), std::random_device{}());
  return buf;
}

bool process_alive(long pid) { return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// "is a symbolic link" / "is a file" / "holds N entries" etc. for messages.
bool empty_directory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::is_empty(p, ec);
}

// Either path inside the other (or equal): compared after resolving links and "..".
bool overlaps(const fs::path& a, const fs::path& b, bool& b_inside_a) {
  std::error_code ec;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a), ec), cb = fs::weakly_canonical(fs::absolute(b), ec);
  auto inside = [](const fs::path& x, const fs::path& dir) {  // x == dir or under it
    const fs::path rel = x.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
  };
  b_inside_a = inside(cb, ca);
  return b_inside_a || inside(ca, cb);
}

void check_output_state(const OutputTarget& out) {
  const std::string where = out.option + " " + out.path.string();
  if (out.path.empty()) throw Error("no output path given", out.option);
  for (const auto& [option, input] : out.inputs) {
    bool input_inside = false;
    if (!overlaps(out.path, input, input_inside)) continue;
    const std::string how = fs::weakly_canonical(fs::absolute(out.path)) == fs::weakly_canonical(fs::absolute(input))
                                ? "is the same path as " + option
                            : input_inside ? "contains " + option + " " + input.string()
                                           : "lies inside " + option + " " + input.string();
    throw Error("the output " + how, where, "write the output to a new path outside the inputs");
  }
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out.path, ec);
  if (fs::exists(st)) {
    const bool recognised = out.kind.recognise && fs::is_directory(st) == out.kind.directory && out.kind.recognise(out.path);
    if (fs::is_symlink(st)) throw Error("the output path is a symbolic link; ember does not write through it", where, "give the real path or a new one");
    if (out.kind.directory && !fs::is_directory(st))
      throw Error("the output path is an existing file; a " + out.kind.name + " is a directory", where, "choose a new --out; ember never removes a file it did not write");
    if (!out.kind.directory && fs::is_directory(st))
      throw Error("the output path is an existing directory; a " + out.kind.name + " is a file", where, "give a file path that does not exist yet");
    if (!(out.kind.directory && empty_directory(out.path))) {
      if (out.force && recognised) return;
      if (out.force)
        throw Error("--force replaces only a previous " + out.kind.name + " written by ember, and this is not one (or holds other files)", where,
                    "choose a new path; ember never removes what it did not write");
      throw Error(std::string(out.kind.directory ? "the output directory exists and is not empty" : "the output file exists"), where,
                  recognised ? "it is a previous " + out.kind.name + ": pass --force to replace it, or choose a new path"
                             : "choose a new path; ember never removes what it did not write");
    }
  }
  // The nearest existing ancestor must be a writable directory (missing ones are created for a
  // directory output; a file's directory must exist).
  fs::path parent = fs::absolute(out.path).parent_path();
  if (!out.kind.directory && !fs::is_directory(parent, ec))
    throw Error("directory " + parent.string() + " does not exist", where, "create it first, or write elsewhere");
  while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.root_path()) parent = parent.parent_path();
  if (!fs::is_directory(parent, ec)) throw Error(parent.string() + " is not a directory", where, "choose another output path");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    throw Error("cannot write in " + parent.string() + ": " + strerror(errno), where, "choose a directory you can write to");
}

// A test seam: with EMBER_TEST_STOP_BEFORE_COMMIT set, a writer stops itself (SIGSTOP) with its
// temporary complete and not yet renamed, so tests can kill it in its write phase.
void stop_for_test() {
  if (std::getenv("EMBER_TEST_STOP_BEFORE_COMMIT")) raise(SIGSTOP);
}

// Moves `tmp` to `target`: without replacing anything that appeared meanwhile, or exchanging
// places with an allowed previous output, which then lies at `tmp` for removal.
void commit(const OutputTarget& out, const fs::path& tmp, bool& swapped) {
  const fs::path target = fs::absolute(out.path);
  check_output_state(out);  // again: something may have appeared while we worked
  const bool exists = fs::exists(fs::symlink_status(target));
  swapped = false;
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), exists ? RENAME_EXCHANGE : RENAME_NOREPLACE) == 0) {
    swapped = exists;
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw Error(std::string("cannot move the output into place: ") + strerror(errno), out.option + " " + out.path.string(),
                "check that nothing else writes there");
  // A file system without renameat2 flags: the old output steps aside first.
  if (exists) {
    fs::path aside = tmp;
    aside += ".old";
    fs::rename(target, aside);
    fs::rename(tmp, target);
    fs::rename(aside, tmp);
    swapped = true;
  } else {
    fs::rename(tmp, target);
  }
}

}  // namespace

TempPath::TempPath(const fs::path& beside) {
  path_ = fs::absolute(beside);
  path_ += temp_suffix();
  install_handlers();
  for (int i = 0; i < kSlots; i++) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    snprintf(g_slots[i].path, sizeof g_slots[i].path, "%s", path_.c_str());
    g_slots[i].state.store(2);
    slot_ = i;
    break;
  }
}

void TempPath::release() {
  if (slot_ >= 0) g_slots[slot_].state.store(0);
  slot_ = -1;
  path_.clear();
}

TempPath::~TempPath() {
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  release();
}

void remove_stale_temporaries(const fs::path& dir) {
  static const std::regex kStale(R"(.+\.ember-tmp-(\d+)-[0-9a-f]{8}(\.old)?)");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (name.find(kTempTag) == std::string::npos || !std::regex_match(name, m, kStale)) continue;
    if (process_alive(std::stol(m[1].str()))) continue;
    std::error_code rec;
    fs::remove_all(it->path(), rec);
  }
}

void check_output(const OutputTarget& out) {
  check_output_state(out);
  std::error_code ec;
  const fs::path parent = fs::absolute(out.path).parent_path();
  if (fs::is_directory(parent, ec)) remove_stale_temporaries(parent);
}

void write_output_directory(const OutputTarget& out, const std::function<void(const fs::path&)>& fill) {
  check_output(out);
  const fs::path target = fs::absolute(out.path);
  fs::create_directories(target.parent_path());
  TempPath tmp(target);
  fs::create_directory(tmp.path());
  fill(tmp.path());  // an exception: ~TempPath removes the partial directory
  stop_for_test();
  bool swapped = false;
  commit(out, tmp.path(), swapped);
  if (!swapped) tmp.release();  // else the previous output lies at tmp: ~TempPath removes it
}

void write_output_file(const OutputTarget& out, const std::function<void(const fs::path&)>& fill) {
  check_output(out);
  TempPath tmp(fs::absolute(out.path));
  fill(tmp.path());
  stop_for_test();
  bool swapped = false;
  commit(out, tmp.path(), swapped);
  if (!swapped) tmp.release();
}

}  // namespace ember
