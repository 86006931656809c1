#include "formats/problems.h"

#include "common/error.h"

namespace ember::formats {

std::string Problem::to_string() const {
  std::string s = file;
  if (!field.empty()) s += (s.empty() ? "" : ": ") + field;
  if (offset) s += " (byte " + std::to_string(*offset) + ")";
  s += (s.empty() ? "" : ": ") + message;
  if (!expected.empty() || !found.empty()) s += ": expected " + expected + ", found " + found;
  return s;
}

void Problems::throw_if_any(const std::string& what, const std::string& where, const std::string& fix) const {
  if (list_.empty()) return;
  std::string msg = what + " (" + std::to_string(list_.size()) + " problem" + (list_.size() == 1 ? "" : "s") + "):";
  for (const auto& p : list_) msg += "\n  - " + p.to_string();
  throw Error(msg, where, fix);
}

}  // namespace ember::formats
