// Runs the real `ember` binary (ember_binary.h) and captures what it prints; finds numpy.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

#include "ember_binary.h"

namespace ember::test {

struct CliResult {
  int status;
  std::string out;  // stdout and stderr together
};

inline CliResult run_ember(const std::string& args) {
  std::string cmd = ember::test::ember_binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace ember::test
