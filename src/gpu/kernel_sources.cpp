#include "gpu/kernel_sources.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/error.h"

namespace ember::gpu {
namespace {

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  size_t b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

void expand(const std::string& file, const std::set<std::string>& defines, std::set<std::string>& included,
            PreprocessedShader& out) {
  const auto& sources = embedded_kernel_sources();
  auto it = sources.find(file);
  if (it == sources.end()) throw Error("no embedded WGSL file '" + file + "'", "src/kernels", "add the file and rebuild");
  included.insert(file);
  std::istringstream in{std::string(it->second)};
  std::string line;
  int lineno = 0;
  // Stack of (this branch active, some branch taken) for nested #if.
  std::vector<std::pair<bool, bool>> stack;
  auto active = [&] {
    for (auto& [on, taken] : stack)
      if (!on) return false;
    return true;
  };
  while (std::getline(in, line)) {
    lineno++;
    std::string t = trim(line);
    auto where = [&] { return "src/kernels/" + file + ":" + std::to_string(lineno); };
    if (t.rfind("#if ", 0) == 0) {
      std::string name = trim(t.substr(4));
      bool negate = !name.empty() && name[0] == '!';
      if (negate) name = trim(name.substr(1));
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; }))
        throw Error("'" + t + "' is not #if NAME or #if !NAME", where(), "combine conditions with nested #if or a define of their own");
      bool value = defines.count(name) > 0;
      if (negate) value = !value;
      stack.push_back({value, value});
    } else if (t == "#else") {
      if (stack.empty()) throw Error("#else without #if", where());
      stack.back().first = !stack.back().second;
      stack.back().second = true;
    } else if (t == "#endif") {
      if (stack.empty()) throw Error("#endif without #if", where());
      stack.pop_back();
    } else if (t.rfind("#include", 0) == 0) {
      if (!active()) continue;
      size_t q1 = t.find('"'), q2 = t.rfind('"');
      if (q1 == std::string::npos || q2 <= q1) throw Error("malformed #include", where(), "write #include \"file.wgsl\"");
      std::string inc = t.substr(q1 + 1, q2 - q1 - 1);
      if (!included.count(inc)) expand(inc, defines, included, out);
    } else if (!t.empty() && t[0] == '#') {
      throw Error("unknown preprocessor directive '" + t + "'", where(), "use #include, #if, #else or #endif");
    } else if (active()) {
      out.text += line;
      out.text += '\n';
      out.origins.push_back({file, lineno});
    }
  }
  if (!stack.empty()) throw Error("#if without #endif", "src/kernels/" + file);
}

}  // namespace

PreprocessedShader preprocess_wgsl(const std::string& file, const std::set<std::string>& defines) {
  PreprocessedShader out;
  std::set<std::string> included;
  expand(file, defines, included, out);
  return out;
}

}  // namespace ember::gpu
