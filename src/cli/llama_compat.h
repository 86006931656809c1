// llama.cpp flags people type from habit (-ngl 99, -t 8, --mlock, -fa, ...): accepted on the LLM
// commands and answered with a one-line note on stderr saying what ember does instead, rather
// than a parser error that leaves them guessing. They change nothing.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ember::cli {

void add_llama_cpp_notes(CLI::App& cmd);

// The parser takes one-letter short names only: llama.cpp's multi-letter ones (-ngl, -fa, -tb,
// ...) become their long names before parsing. (Left alone, "-fa" would read as "-f a".)
void rewrite_llama_cpp_flags(std::vector<std::string>& args);

}  // namespace ember::cli
