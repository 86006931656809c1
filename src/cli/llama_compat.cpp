#include "cli/llama_compat.h"

#include <cstdio>
#include <string>

namespace ember::cli {
namespace {

constexpr const char* kGroup = "llama.cpp flags (accepted; a note says what ember does instead)";

void note(const std::string& flag, const char* what) { std::fprintf(stderr, "ember: note: %s has no effect: %s\n", flag.c_str(), what); }

struct Flag {
  const char* names;  // llama.cpp's spellings, the one users type most first
  int values;         // 1: takes a value; 0: a bare flag; -1: an optional value
  const char* what;
};

const Flag kFlags[] = {
    {"-ngl,--n-gpu-layers,--gpu-layers", 1, "every layer runs on the GPU (WebGPU); pick the adapter with --device (see `ember devices`)"},
    {"-t,--threads", 1, "the model runs on the GPU, so there are no CPU compute threads to set"},
    {"-tb,--threads-batch", 1, "prefill runs on the GPU too; there are no CPU threads to set"},
    {"--mlock", 0, "the weights are copied into GPU buffers when the model loads; there is no mapped file to lock"},
    {"--no-mmap", 0, "the weights are read into GPU buffers once; nothing is memory-mapped while it runs"},
    {"-fa,--flash-attn", -1, "ember's attention kernels are always fused (one pass over the KV cache); there is nothing to switch"},
    {"-b,--batch-size", 1, "prefill goes in chunks sized by the model's kernels; serve batches decodes over --parallel slots"},
    {"-ub,--ubatch-size", 1, "prefill goes in chunks sized by the model's kernels"},
    {"--numa", 1, "the model runs on the GPU; CPU memory placement does not matter"},
    {"-ctk,--cache-type-k", 1, "the KV cache's type is fixed by ember's kernels"},
    {"-ctv,--cache-type-v", 1, "the KV cache's type is fixed by ember's kernels"},
};

std::vector<std::string> split(const std::string& names) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= names.size()) {
    size_t comma = names.find(',', pos);
    if (comma == std::string::npos) comma = names.size();
    out.push_back(names.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

bool multi_letter_short(const std::string& n) { return n.size() > 2 && n[0] == '-' && n[1] != '-'; }

}  // namespace

void add_llama_cpp_notes(CLI::App& cmd) {
  for (const Flag& f : kFlags) {
    const std::vector<std::string> names = split(f.names);
    std::string parser_names;  // the spellings CLI11 takes; rewrite_llama_cpp_flags maps the others
    for (const auto& n : names)
      if (!multi_letter_short(n)) parser_names += (parser_names.empty() ? "" : ",") + n;
    std::string shown;  // every spelling: the note says which flag it is whichever was typed
    for (const auto& n : names) shown += (shown.empty() ? "" : "/") + n;
    const char* what = f.what;
    if (f.values == 0) {
      cmd.add_flag_callback(parser_names, [shown, what] { note(shown, what); }, what)->group(kGroup);
    } else {
      auto* o = cmd.add_option_function<std::string>(parser_names, [shown, what](const std::string&) { note(shown, what); }, what)->group(kGroup);
      if (f.values < 0) o->expected(0, 1);
      else o->type_name("N");
    }
  }
}

void rewrite_llama_cpp_flags(std::vector<std::string>& args) {
  for (auto& a : args)
    for (const Flag& f : kFlags) {
      const std::vector<std::string> names = split(f.names);
      if (multi_letter_short(names.front()) && a == names.front()) a = names[1];
    }
}

}  // namespace ember::cli

