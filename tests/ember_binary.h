// The `ember` binary the CLI tests run: $EMBER_BINARY when set (a tree moved to another machine,
// as on the device runs), else the build's own (EMBER_BINARY, set by CMake).
#pragma once

#include <cstdlib>
#include <string>

namespace ember::test {

inline std::string ember_binary() {
  const char* env = std::getenv("EMBER_BINARY");
  return env && *env ? env : EMBER_BINARY;
}

}  // namespace ember::test
