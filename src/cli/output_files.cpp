#include "cli/output_files.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/error.h"

namespace ember::cli {

void check_new_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  std::set<fs::path> seen;
  for (const auto& [path, option] : outputs) {
    if (path.empty()) continue;
    const fs::path abs = fs::absolute(path).lexically_normal();
    const std::string where = option + " " + path;
    if (!seen.insert(abs).second) throw Error("two outputs have the same path", where, "give each output its own file");
    if (fs::exists(abs))
      throw Error(fs::is_directory(abs) ? "is a directory" : "already exists", where,
                  "ember does not overwrite files: remove it or choose another path");
    const fs::path dir = abs.parent_path();
    if (!fs::is_directory(dir)) throw Error("directory " + dir.string() + " does not exist", where, "create it first, or write elsewhere");
    if (::access(dir.c_str(), W_OK) != 0) throw Error("directory " + dir.string() + " is not writable", where, "write elsewhere");
  }
}

}  // namespace ember::cli
