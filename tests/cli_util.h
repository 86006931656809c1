// Runs the real `ember` binary (EMBER_BINARY) and captures what it prints; finds numpy.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

namespace ember::test {

struct CliResult {
  int status;
  std::string out;  // stdout and stderr together
};

inline CliResult run_ember(const std::string& args) {
  std::string cmd = std::string(EMBER_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// A python3 that imports numpy (the PATH one may be a separate installation without it), or "".
inline std::string numpy_python() {
  for (const char* py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  return "";
}

}  // namespace ember::test
