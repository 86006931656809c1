// numpy for tests that check files against the real np.load (scripts/setup.sh installs
// python3-numpy, so in CI these run; elsewhere they skip with a message saying why).
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ember::test {

// A python3 that imports numpy (the PATH one may be a separate installation without it), or "".
inline std::string numpy_python() {
  for (const char* py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  return "";
}

// What `python -c code` prints (stdout and stderr), trailing newline removed.
inline std::string python_output(const std::string& python, const std::string& code) {
  std::string cmd = python + " -c \"" + code + "\" 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace ember::test
