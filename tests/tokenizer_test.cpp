// The tokenizer against Hugging Face `tokenizers` 0.23.2 goldens on real tokenizer.json files
// (Qwen3, Llama 3, Claude, ember's demo tokenizer), the streaming detokenizer, the LFM2 chat
// template and the errors for what ember does not support.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "llm/chat_template.h"
#include "llm/tokenizer.h"
#include "llm/utf8.h"

using namespace ember;
using llm::Tokenizer;

namespace {

std::string fixture(const std::string& rel) { return std::string(EMBER_SOURCE_DIR) + "/tests/fixtures/" + rel; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Loading a 6 MB tokenizer.json takes a while: each is loaded once per test run.
const Tokenizer& fixture_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<Tokenizer>(Tokenizer::from_file(fixture("tokenizers/" + name + ".json")));
  return *slot;
}

std::string show(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

void check_goldens(const std::string& name) {
  const Tokenizer& tok = fixture_tokenizer(name);
  auto golden = nlohmann::json::parse(read_file(fixture("tokenizer_goldens/" + name + ".json")));
  EXPECT_EQ(tok.vocab_size(), golden["vocab_size"].get<size_t>());
  size_t failures = 0;
  for (size_t i = 0; i < golden["cases"].size(); i++) {
    const auto& c = golden["cases"][i];
    std::string text = c["text"];
    auto want = c["ids"].get<std::vector<uint32_t>>();
    auto want_special = c["ids_with_special"].get<std::vector<uint32_t>>();
    auto got = tok.encode(text, false);
    auto got_special = tok.encode(text, true);
    std::string decoded = tok.decode(want_special, false), skipped = tok.decode(want_special, true);
    bool ok = got == want && got_special == want_special && decoded == c["decoded"] && skipped == c["decoded_skip_special"];
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << name << " case " << i << " text: " << text.substr(0, 200) << "\n want: " << show(want)
                    << "\n  got: " << show(got) << "\n special want: " << show(want_special)
                    << "\n special  got: " << show(got_special) << "\n decoded: [" << decoded << "] want ["
                    << c["decoded"].get<std::string>() << "]\n skipped: [" << skipped << "] want ["
                    << c["decoded_skip_special"].get<std::string>() << "]";
    }
  }
  EXPECT_EQ(failures, 0u) << name;
}

}  // namespace

TEST(TokenizerGoldens, Qwen3) { check_goldens("qwen3"); }
TEST(TokenizerGoldens, Llama3) { check_goldens("llama3"); }
TEST(TokenizerGoldens, Claude) { check_goldens("claude"); }
TEST(TokenizerGoldens, EmberDemo) { check_goldens("ember-demo"); }

TEST(TokenizerGoldens, SmallHandMadeTokenizers) {
  // byte_fallback, unk/fuse_unk, SentencePiece-style normalizers and decoders, every Split
  // behaviour with and without invert, added-token flags (tools/golden/make_tokenizer_fixtures.js).
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture("tokenizer_goldens"))) {
    std::string name = entry.path().stem().string();
    if (!name.starts_with("synthetic-")) continue;
    SCOPED_TRACE(name);
    check_goldens(name);
    n++;
  }
  EXPECT_EQ(n, 12u);
}

TEST(TokenizerGoldens, CorpusMatchesTheGoldens) {
  // The goldens were made from this corpus file (tools/golden/corpus.js splits it the same way).
  std::string text = read_file(fixture("tokenizer_corpus.txt"));
  size_t body = text.find('\n', text.find('\n') + 1) + 1;
  std::vector<std::string> cases;
  for (size_t pos = body;;) {
    size_t sep = text.find("\n=====\n", pos);
    cases.push_back(text.substr(pos, sep == std::string::npos ? std::string::npos : sep - pos));
    if (sep == std::string::npos) break;
    pos = sep + 7;
  }
  auto golden = nlohmann::json::parse(read_file(fixture("tokenizer_goldens/qwen3.json")));
  ASSERT_EQ(golden["cases"].size(), cases.size() + 1);
  for (size_t i = 0; i < cases.size(); i++) EXPECT_EQ(golden["cases"][i]["text"], cases[i]) << i;
}

TEST(TokenizerStreaming, SplitEmojiIsHeldBack) {
  // Byte-level BPE (Qwen3) and SentencePiece-style byte fallback (<0xNN> tokens) both split emoji.
  for (const char* name : {"qwen3", "synthetic-spm"}) {
    SCOPED_TRACE(name);
    const Tokenizer& tok = fixture_tokenizer(name);
    std::string text = "family \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 and \U0001F9D1\U0001F3FF\u200D\U0001F4BB done";
    auto ids = tok.encode(text);
    llm::StreamingDetokenizer stream(tok, /*skip_special_tokens=*/true);
    std::string all;
    size_t held = 0;
    for (uint32_t id : ids) {
      std::string piece = stream.push(id);
      EXPECT_EQ(llm::utf8::first_invalid(piece), std::string::npos);
      EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "a partial character leaked as U+FFFD";
      if (piece.empty()) held++;
      all += piece;
    }
    all += stream.finish();
    EXPECT_EQ(all, tok.decode(ids, true));
    EXPECT_NE(all.find("\U0001F9D1\U0001F3FF\u200D\U0001F4BB"), std::string::npos);
    EXPECT_GT(held, 0u) << "this text should split some emoji across tokens";
  }
}

TEST(TokenizerStreaming, MatchesBatchDecodeOnCorpus) {
  for (const char* name : {"qwen3", "ember-demo", "synthetic-spm", "synthetic-split-MergedWithPrevious", "synthetic-bytelevel"}) {
    const Tokenizer& tok = fixture_tokenizer(name);
    auto golden = nlohmann::json::parse(read_file(fixture(std::string("tokenizer_goldens/") + name + ".json")));
    for (bool skip : {false, true}) {
      for (const auto& c : golden["cases"]) {
        auto ids = c["ids_with_special"].get<std::vector<uint32_t>>();
        llm::StreamingDetokenizer stream(tok, skip);
        std::string all;
        for (uint32_t id : ids) all += stream.push(id);
        all += stream.finish();
        EXPECT_EQ(all, c[skip ? "decoded_skip_special" : "decoded"].get<std::string>()) << name << ": " << c["text"];
      }
    }
  }
}

TEST(TokenizerStreaming, UnfinishedCharacterAtTheEndBecomesReplacement) {
  const Tokenizer& tok = fixture_tokenizer("qwen3");
  // The first byte-level token of a 4-byte emoji alone: held back, then flushed as U+FFFD.
  auto ids = tok.encode("\U0001FAE8");  // a recent emoji, spelled with several byte tokens
  ASSERT_GT(ids.size(), 1u);
  llm::StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.finish(), tok.decode({ids[0]}));
}

TEST(TokenizerChat, Lfm2TemplateText) {
  std::vector<llm::ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "2+2?"}};
  EXPECT_EQ(llm::render_lfm2_chat(msgs, true),
            "<|startoftext|><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(llm::render_lfm2_chat({{"user", "Hi"}}, false), "<|startoftext|><|im_start|>user\nHi<|im_end|>\n");
  // An empty system prompt is left out; tools join the system prompt; tool results are wrapped.
  EXPECT_EQ(llm::render_lfm2_chat({{"system", ""}, {"tool", "42"}}, false, {"{\"name\":\"f\"}", "{\"name\":\"g\"}"}),
            "<|startoftext|><|im_start|>system\nList of tools: <|tool_list_start|>[{\"name\":\"f\"}, {\"name\":\"g\"}]"
            "<|tool_list_end|><|im_end|>\n<|im_start|>tool\n<|tool_response_start|>42<|tool_response_end|><|im_end|>\n");
}

TEST(TokenizerChat, Lfm2TemplateIds) {
  const Tokenizer& tok = fixture_tokenizer("ember-demo");
  auto ids = llm::encode_lfm2_chat(tok, {{"user", "Hi"}}, true);
  uint32_t bos = *tok.token_to_id("<|startoftext|>"), start = *tok.token_to_id("<|im_start|>"), end = *tok.token_to_id("<|im_end|>");
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids[0], bos);
  EXPECT_EQ(ids[1], start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), start), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  EXPECT_EQ(tok.decode(ids), "<|startoftext|><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(tok.decode(ids, true), "user\nHi\nassistant\n");
  EXPECT_THROW(llm::encode_lfm2_chat(fixture_tokenizer("claude"), {{"user", "Hi"}}, true), Error);
}

namespace {

// A minimal tokenizer.json around a replaceable part, for the error tests.
std::string tiny_json(const std::string& model, const std::string& pre = "null", const std::string& decoder = "null") {
  return R"({"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":)" + pre +
         R"(,"post_processor":null,"decoder":)" + decoder + R"(,"model":)" + model + "}";
}
const std::string kTinyBpe = R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]})";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(TokenizerErrors, UnsupportedComponentsAreNamed) {
  auto load = [](const std::string& json) { return [json] { Tokenizer::from_json_text(json, "t.json"); }; };
  EXPECT_NE(error_of(load(tiny_json(R"({"type":"WordPiece","vocab":{"a":0}})"))).find("\"WordPiece\""), std::string::npos);
  EXPECT_NE(error_of(load(tiny_json(R"({"type":"Unigram","vocab":[["a",0.0]]})"))).find("\"Unigram\""), std::string::npos);
  std::string e = error_of(load(tiny_json(kTinyBpe, R"({"type":"Sequence","pretokenizers":[{"type":"Whitespace"}]})")));
  EXPECT_NE(e.find("\"Whitespace\""), std::string::npos) << e;
  EXPECT_NE(e.find("pre_tokenizer.pretokenizers[0]"), std::string::npos) << e;
  EXPECT_NE(error_of(load(tiny_json(kTinyBpe, "null", R"({"type":"WordPiece"})"))).find("decoder"), std::string::npos);
  EXPECT_NE(error_of(load(R"({"model": )" + kTinyBpe + R"(, "normalizer": {"type":"BertNormalizer"}})")).find("BertNormalizer"),
            std::string::npos);
  EXPECT_NE(error_of(load("{not json")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(load(tiny_json(R"({"type":"BPE","vocab":{"a":0},"merges":["a b"]})"))).find("merges[0]"), std::string::npos);
  EXPECT_NE(error_of(load(tiny_json(kTinyBpe, R"({"type":"Split","pattern":{"Regex":"(["},"behavior":"Isolated"})")))
                .find("regex does not compile"),
            std::string::npos);
  EXPECT_THROW(Tokenizer::from_file("/nonexistent/tokenizer.json"), Error);
}

TEST(TokenizerErrors, DecodeOutOfRangeAndBadInput) {
  auto tok = Tokenizer::from_json_text(tiny_json(kTinyBpe), "t.json");
  EXPECT_EQ(tok.encode("abab"), (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(tok.decode({2, 0}), "ab a");  // no decoder: tokens joined by spaces, as upstream
  std::string e = error_of([&] { tok.decode({0, 3}); });
  EXPECT_NE(e.find("token id 3"), std::string::npos) << e;
  EXPECT_THROW(tok.encode("a\xFF"), Error);
  EXPECT_THROW(fixture_tokenizer("qwen3").decode({1000000}), Error);
}

TEST(TokenizerCli, TokenizeAndDetokenize) {
  std::string tok_file = fixture("tokenizers/ember-demo.json");
  auto run = [](const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return out;
  };
  std::string ids = run(std::string(EMBER_BINARY) + " tokenize --tokenizer " + tok_file + " --add-special --ids --text 'Hello <|im_end|> world'");
  auto want = fixture_tokenizer("ember-demo").encode("Hello <|im_end|> world", true);
  std::string joined;
  for (size_t i = 0; i < want.size(); i++) {
    if (i) joined += ",";
    joined += std::to_string(want[i]);
  }
  EXPECT_EQ(ids, joined + "\n");
  EXPECT_EQ(run("echo '" + joined + "' | " + EMBER_BINARY + " detokenize --skip-special --tokenizer " + tok_file), "Hello  world");
}
