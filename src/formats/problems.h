// Validation findings: validators collect every problem, then report them all at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::formats {

struct Problem {
  std::string file;                // "runtime.json", "weights.bin", ...
  std::string field;               // "runtime.sections[3] (L0.conv.in_proj.scales)", ...
  std::optional<uint64_t> offset;  // byte offset the problem is at, where one applies
  std::string message;             // what is wrong
  std::string expected, found;     // both empty when not a comparison
  std::string to_string() const;   // "weights.bin: <field> (byte N): message: expected X, found Y"
};

class Problems {
 public:
  void add(Problem p) { list_.push_back(std::move(p)); }
  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  const std::vector<Problem>& list() const { return list_; }
  // Throws one ember::Error listing every problem (one per line) when there are any.
  void throw_if_any(const std::string& what, const std::string& where, const std::string& fix) const;

 private:
  std::vector<Problem> list_;
};

}  // namespace ember::formats
