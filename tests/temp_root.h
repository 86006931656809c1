// A scratch directory of a test, new and empty, removed with the object.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ember::test {

struct TempRoot {
  std::filesystem::path dir;
  explicit TempRoot(const std::string& name) {
    dir = std::filesystem::temp_directory_path() / ("ember_" + name + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempRoot() { std::filesystem::remove_all(dir); }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;
};

}  // namespace ember::test
