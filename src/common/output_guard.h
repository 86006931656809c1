// Every command that writes a file or a directory the user names (--out) goes through here, so
// that ember never destroys data it did not create. A new command adopts it in three lines:
//
//   OutputTarget out(a->out);                      // the path as given, for messages
//   out.kind = formats::llm_pack_output();         // or a kind of your own (see OutputKind)
//   out.force = a->force;                          // the command's --force flag, if it has one
//   out.inputs = {{"--from", a->from}};            // every path the command reads
//   check_output(out);                             // FIRST, before any long computation
//   ...
//   write_output_directory(out, [&](const fs::path& tmp) { write_file_atomic(tmp / "x.bin", bytes); });
//   // one file instead: write_output_file(out, [&](const fs::path& tmp) { ...write tmp... });
//
// The rules (check_output; write_output_* check again just before the rename):
//  - The output must not exist, or be an empty directory (directory kinds).
//  - With `force`, an existing output is replaced only when `kind.recognise` says it is a previous
//    ember output of the same kind (its manifest, runtime.json or metadata, and no foreign files).
//    Anything else (a file where a directory goes, a folder with other files, a symbolic link) is
//    an error naming it, with or without force.
//  - An output equal to an input, inside one, or containing one is always an error.
//  - Work happens in a temporary `PARENT/NAME.ember-tmp-PID-HEX` beside the output, renamed into
//    place when complete. It is removed on an exception and on SIGINT/SIGTERM/SIGHUP; one left
//    by a killed process (SIGKILL, power loss) is removed by the next ember run that writes into
//    the same directory, once no process has its PID.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ember {

struct OutputKind {
  std::string name = "output";  // in messages: "LLM runtime pack", ".npy file"
  bool directory = true;
  // True when `path` holds a previous ember output of this kind that --force may replace;
  // empty: nothing may be replaced.
  std::function<bool(const std::filesystem::path&)> recognise;
};

struct OutputTarget {
  OutputTarget(std::filesystem::path p, std::string opt = "--out") : path(std::move(p)), option(std::move(opt)) {}
  OutputTarget(const std::string& p) : OutputTarget(std::filesystem::path(p)) {}
  OutputTarget(const char* p) : OutputTarget(std::filesystem::path(p)) {}

  std::filesystem::path path;
  std::string option;  // the command-line option that named it, for messages
  OutputKind kind;
  bool force = false;
  std::vector<std::pair<std::string, std::filesystem::path>> inputs;  // {option, path} of what is read
};

// Throws ember::Error (what, which path, how to fix) when writing `out` could destroy anything
// ember did not create, overlap an input, or cannot work (the directory is missing or not
// writable). Also removes stale temporaries of dead ember processes beside the output.
void check_output(const OutputTarget& out);

// Builds the directory `out` atomically: `fill` writes into a fresh temporary directory beside
// it; complete, it takes the output's place (an allowed previous output is swapped out and
// removed); on any exception or signal it is removed.
void write_output_directory(const OutputTarget& out, const std::function<void(const std::filesystem::path& tmp)>& fill);

// The same for one file: `fill` writes the temporary file `tmp` (e.g. with AtomicFileWriter or
// any writer taking a path).
void write_output_file(const OutputTarget& out, const std::function<void(const std::filesystem::path& tmp)>& fill);

// A temporary path `PATH.ember-tmp-PID-HEX` that SIGINT/SIGTERM/SIGHUP remove (a file or a whole
// directory) while this object lives. Used by the writers above and by AtomicFileWriter.
class TempPath {
 public:
  explicit TempPath(const std::filesystem::path& beside);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void release();  // the path was renamed into place: nothing to remove any more

 private:
  std::filesystem::path path_;
  int slot_ = -1;
};

// Removes `DIR/*.ember-tmp-PID-HEX[.old]` entries whose process is gone.
void remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace ember
