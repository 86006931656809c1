// Checks of output paths made before a command does any work, so a bad path fails at once and
// nothing is half-written: the directory exists and is writable, the file does not exist yet
// (ember never overwrites a file it did not create), and no two outputs share a path.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ember::cli {

// (path, option) pairs; empty paths are skipped. Throws ember::Error naming the option.
void check_new_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace ember::cli
