// WGSL sources embedded at build time (cmake/embed_wgsl.cmake), and the small preprocessor that
// makes structural variants of them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ember::gpu {

// File name ("rmsnorm.wgsl") -> source text, for every file in src/kernels/.
const std::map<std::string, std::string_view>& embedded_kernel_sources();

// A preprocessed shader: the WGSL text plus, for each output line, the file and line it came from,
// so that compiler messages point at the .wgsl file the reader edits.
struct PreprocessedShader {
  std::string text;
  struct Origin {
    std::string file;
    int line;
  };
  std::vector<Origin> origins;  // origins[i] = origin of output line i+1
};

// Directives, each on its own line: `#include "file.wgsl"` (once per shader), `#if NAME`,
// `#if !NAME`, `#else`, `#endif`. NAME is true when it is in `defines`. Numeric tuning belongs in
// WGSL `override` constants, not here: this is only for variants that change structure.
PreprocessedShader preprocess_wgsl(const std::string& file, const std::set<std::string>& defines);

}  // namespace ember::gpu
