// TextEncoder's token ids against Hugging Face `tokenizers` with TRELLIS's call (max_length 77,
// truncation, padding with <|endoftext|>): tests/fixtures/clip_text/token_goldens.json, made by
// tools/golden/make_clip_text_tokens.js.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "tokenizer/tokenizer.h"
#include "trellis/clip_checkpoint.h"
#include "trellis/text_encoder.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path source(const std::string& rel) { return fs::path(EMBER_SOURCE_DIR) / rel; }

}  // namespace

TEST(TextEncoderTokens, SynthTokenizerIsTheFixture) {
  // The goldens were made on this file: it must stay what `ember synth clip-text` writes.
  EXPECT_EQ(trellis::synth_clip_tokenizer_json(formats::clip_vit_l14_text_config()),
            read_file(source("tests/fixtures/clip_text/tokenizer.json")));
}

TEST(TextEncoderTokens, MatchTheTokenizersLibrary) {
  const auto g = nlohmann::json::parse(read_file(source("tests/fixtures/clip_text/token_goldens.json")));
  const int context = g["context_length"].get<int>();
  ASSERT_EQ(context, 77);
  size_t cases = 0, truncated_cases = 0;
  for (const auto& [file, list] : g["tokenizers"].items()) {
    const auto tok = llm::Tokenizer::from_file(source(file).string());
    for (const auto& c : list) {
      const std::string text = c["text"].get<std::string>();
      std::vector<bool> truncated;
      const auto ids = trellis::clip_tokenize(tok, {text}, context, &truncated);
      EXPECT_EQ(ids[0], c["ids"].get<std::vector<int32_t>>()) << file << ": '" << text << "'";
      EXPECT_EQ(truncated[0], c["truncated"].get<bool>()) << file << ": '" << text << "'";
      cases++;
      truncated_cases += c["truncated"].get<bool>();
    }
  }
  EXPECT_GE(cases, 20u);
  EXPECT_GE(truncated_cases, 4u);  // the goldens do exercise truncation
}
