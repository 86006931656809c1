// One error type for everything a user can cause: what went wrong, where, and how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  // `what`: the problem; `where`: file, tensor, field or byte offset; `fix`: what the user can do.
  Error(const std::string& what, const std::string& where = "", const std::string& fix = "")
      : std::runtime_error(compose(what, where, fix)), what_(what), where_(where), fix_(fix) {}

  const std::string& problem() const { return what_; }
  const std::string& where() const { return where_; }
  const std::string& fix() const { return fix_; }

 private:
  static std::string compose(const std::string& what, const std::string& where, const std::string& fix) {
    std::string s = where.empty() ? what : where + ": " + what;
    if (!fix.empty()) s += " (" + fix + ")";
    return s;
  }
  std::string what_, where_, fix_;
};

}  // namespace ember
