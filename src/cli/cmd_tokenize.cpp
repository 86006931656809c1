// `ember tokenize` and `ember detokenize`: a tokenizer.json on the command line, for checking
// prompts and ids by hand and in scripts.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ember::cli {

namespace {

struct TokenizerSource {
  std::string file, model_dir;
  void add_to(CLI::App* cmd) {
    auto* f = cmd->add_option("--tokenizer", file, "a Hugging Face tokenizer.json");
    auto* m = cmd->add_option("--model", model_dir, "a model directory (its tokenizer.json is used)");
    f->excludes(m);
    m->excludes(f);
  }
  llm::Tokenizer load() const {
    if (file.empty() && model_dir.empty())
      throw Error("no tokenizer given", "command line", "pass --tokenizer FILE or --model DIR");
    return llm::Tokenizer::from_file(file.empty() ? model_dir + "/tokenizer.json" : file);
  }
};

std::string read_stdin() { return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()); }

// "1,2, 3\n4" -> {1, 2, 3, 4}
std::vector<uint32_t> parse_ids(const std::string& text) {
  std::vector<uint32_t> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '[' || c == ']') {
      pos++;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') end++;
    if (end == pos || end - pos > 10)
      throw Error("\"" + text.substr(pos, 20) + "\" is not a token id", "ids at character " + std::to_string(pos),
                  "give non-negative integers separated by commas or spaces");
    unsigned long long v = std::stoull(text.substr(pos, end - pos));
    if (v > 0xFFFFFFFFull) throw Error("token id " + text.substr(pos, end - pos) + " is too large", "ids");
    ids.push_back(static_cast<uint32_t>(v));
    pos = end;
  }
  return ids;
}

// Control characters shown as escapes so each token's text stays on one line; a token holding
// part of a character shows its bytes.
std::string printable(const std::string& s) {
  std::string out;
  bool partial = llm::utf8::first_invalid(s) != std::string::npos;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || (partial && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "turn text (stdin or --text) into token ids");
  auto source = std::make_shared<TokenizerSource>();
  auto text = std::make_shared<std::string>();
  auto add_special = std::make_shared<bool>(false);
  auto ids_only = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  source->add_to(cmd);
  auto* text_opt = cmd->add_option("--text", *text, "the text (default: read stdin)");
  cmd->add_flag("--add-special", *add_special, "add the post-processor's special tokens (e.g. BOS)");
  auto* ids_flag = cmd->add_flag("--ids", *ids_only, "print only the ids, comma-separated");
  auto* json_flag = cmd->add_flag("--json", *json, "print JSON: ids, tokens, their text and byte offsets");
  ids_flag->excludes(json_flag);
  cmd->callback([=] {
    llm::Tokenizer tok = source->load();
    std::string input = text_opt->count() ? *text : read_stdin();
    if (size_t bad = llm::utf8::first_invalid(input); bad != std::string::npos) {
      // The library only takes strings; its callers (Node's Buffer.toString, Python's
      // decode(errors="replace")) turn each invalid sequence into U+FFFD. So does ember.
      std::fprintf(stderr, "warning: input is not valid UTF-8 (first bad byte at %zu): invalid bytes become U+FFFD\n", bad);
      input = llm::utf8::lossy(input);
    }
    auto ids = tok.encode(input, *add_special);
    if (*ids_only) {
      for (size_t i = 0; i < ids.size(); i++) std::printf(i ? ",%u" : "%u", ids[i]);
      std::printf("\n");
      return;
    }
    if (*json) {
      nlohmann::json tokens = nlohmann::json::array(), pieces = nlohmann::json::array();
      for (uint32_t id : ids) {
        tokens.push_back(tok.id_to_token(id).value_or(""));
        pieces.push_back(tok.decode({id}));
      }
      // Offsets: [begin, end) bytes of the (UTF-8) input; null where the tokenizer's pipeline
      // does not keep tokens aligned with the input (see Tokenizer::offsets).
      nlohmann::json offsets = nullptr;
      if (auto spans = tok.offsets(input, ids)) {
        offsets = nlohmann::json::array();
        for (auto [b, e] : *spans) offsets.push_back({b, e});
      }
      nlohmann::json out{{"count", ids.size()}, {"ids", ids}, {"tokens", tokens}, {"text", pieces}, {"offsets", offsets}};
      std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      return;
    }
    for (uint32_t id : ids)
      std::printf("%u\t%s%s\n", id, printable(tok.decode_bytes({id}, false)).c_str(), tok.is_special(id) ? "\t(special)" : "");
    std::printf("%zu tokens\n", ids.size());
  });
}

void add_detokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("detokenize", "turn token ids (stdin or --ids) into text");
  auto source = std::make_shared<TokenizerSource>();
  auto ids_text = std::make_shared<std::string>();
  auto skip_special = std::make_shared<bool>(false);
  source->add_to(cmd);
  auto* ids_opt = cmd->add_option("--ids", *ids_text, "comma-separated ids (default: read stdin)");
  cmd->add_flag("--skip-special", *skip_special, "leave out special tokens");
  cmd->callback([=] {
    llm::Tokenizer tok = source->load();
    auto ids = parse_ids(ids_opt->count() ? *ids_text : read_stdin());
    std::string text = tok.decode(ids, *skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (isatty(fileno(stdout))) std::printf("\n");
  });
}

}  // namespace ember::cli
