// Tokenizer throughput on one core: encode and decode ~1 MB of mixed text (the test corpus
// repeated, see mixed_text) with a tokenizer.json. tools/golden/tokenize_bench.js measures
// Hugging Face `tokenizers` on the same text.
// Usage (from the repository root): build/tokenize_bench [tokenizer.json ...]
//   (default: the fixture tokenizers)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace {

// The corpus cases joined by newlines, repeated under numbered headers until 1 MB
// (tokenize_bench.js builds the same string).
std::string mixed_text(const std::string& corpus_path) {
  std::ifstream in(corpus_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::string body = text.substr(text.find('\n', text.find('\n') + 1) + 1);
  std::string joined;
  for (size_t pos = 0;;) {
    size_t sep = body.find("\n=====\n", pos);
    joined += body.substr(pos, sep == std::string::npos ? std::string::npos : sep - pos) + "\n";
    if (sep == std::string::npos) break;
    pos = sep + 7;
  }
  std::string out;
  for (int k = 0; out.size() < 1000000; k++) out += "Section " + std::to_string(k) + "\n" + joined;
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string fixtures = "tests/fixtures/";  // run from the repository root
  std::vector<std::string> files;
  for (int i = 1; i < argc; i++) files.push_back(argv[i]);
  if (files.empty())
    for (const char* n : {"qwen3", "llama3", "ember-demo"}) files.push_back(fixtures + "tokenizers/" + n + ".json");
  std::string text = mixed_text(fixtures + "tokenizer_corpus.txt");
  try {
    for (const auto& file : files) {
      auto t0 = std::chrono::steady_clock::now();
      auto tok = ember::llm::Tokenizer::from_file(file);
      double load = seconds_since(t0);
      std::vector<double> enc, dec;
      size_t count = 0;
      for (int rep = 0; rep < 5; rep++) {
        // A fresh tokenizer state each time would be unfair to the word cache both sides keep;
        // the first repetition is the cold one.
        t0 = std::chrono::steady_clock::now();
        auto ids = tok.encode(text, false);
        enc.push_back(seconds_since(t0));
        count = ids.size();
        t0 = std::chrono::steady_clock::now();
        auto back = tok.decode(ids, false);  // differs from `text` where the normalizer changed it
        dec.push_back(seconds_since(t0));
      }
      double cold = enc[0];
      std::sort(enc.begin(), enc.end());
      std::sort(dec.begin(), dec.end());
      std::printf("%s: %zu bytes -> %zu tokens; load %.2f s; encode cold %.0f tok/s, best %.0f tok/s (%.1f MB/s); decode best %.0f tok/s\n",
                  file.c_str(), text.size(), count, load, count / cold, count / enc[0], text.size() / enc[0] / 1e6,
                  count / dec[0]);
    }
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "tokenize_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
