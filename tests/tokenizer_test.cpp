// The tokenizer against Hugging Face `tokenizers` 0.23.2 goldens on real tokenizer.json files
// (Qwen3, Llama 3, Claude, Llama 2, GPT-3.5, DeepSeek V3, ember's demo tokenizer) and hand-made
// ones (CLIP's structure, Metaspace, BERT-style), byte offsets, CLIP's 77-id padding, the
// streaming detokenizer, the LFM2 chat template, the CLI and the errors for what ember does
// not support.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "ember_binary.h"

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
  EXPECT_EQ(tok.vocab_size(), golden["id_limit"].get<size_t>());
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
TEST(TokenizerGoldens, Llama2) { check_goldens("llama2"); }          // SentencePiece-style BPE, byte fallback
TEST(TokenizerGoldens, Gpt35Turbo) { check_goldens("gpt35turbo"); }  // cl100k: Split Removed + invert
TEST(TokenizerGoldens, DeepSeekV3) { check_goldens("deepseek_v3"); }  // several Splits, empty normalizer Sequence

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
  EXPECT_EQ(n, 19u);
}

TEST(TokenizerGoldens, ClipPaddedTo77) {
  // CLIP's structure (synthetic-clip: NFC + Replace + Lowercase, Split, ByteLevel, "</w>" BPE,
  // RobertaProcessing): 77 ids, truncated and padded as the library's truncation + padding do.
  const Tokenizer& tok = fixture_tokenizer("synthetic-clip");
  auto golden = nlohmann::json::parse(read_file(fixture("tokenizer_goldens/synthetic-clip.json")));
  size_t truncated = 0;
  for (const auto& c : golden["cases"]) {
    auto want = c["ids_padded_77"].get<std::vector<uint32_t>>();
    EXPECT_EQ(tok.encode_padded(c["text"].get<std::string>(), 77), want) << c["text"];
    if (c["ids"].size() > 75) truncated++;
  }
  EXPECT_GT(truncated, 0u) << "some corpus case should be longer than 77 tokens";
  uint32_t eot = *tok.token_to_id("<|endoftext|>");
  size_t n = tok.encode("a photo of a cat").size();
  auto explicit_pad = tok.encode_padded("a photo of a cat", n + 3, 0u);
  EXPECT_EQ(explicit_pad[n + 1], eot);
  EXPECT_EQ(explicit_pad[n + 2], 0u);
  EXPECT_EQ(tok.encode_padded("", 3), (std::vector<uint32_t>{*tok.token_to_id("<|startoftext|>"), eot, eot}));
  EXPECT_THROW(tok.encode_padded("x", 1), Error);
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
  std::string e = error_of(load(tiny_json(kTinyBpe, R"({"type":"Sequence","pretokenizers":[{"type":"UnicodeScripts"}]})")));
  EXPECT_NE(e.find("\"UnicodeScripts\""), std::string::npos) << e;
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
  std::string ids = run(ember::test::ember_binary() + " tokenize --tokenizer " + tok_file + " --add-special --ids --text 'Hello <|im_end|> world'");
  auto want = fixture_tokenizer("ember-demo").encode("Hello <|im_end|> world", true);
  std::string joined;
  for (size_t i = 0; i < want.size(); i++) {
    if (i) joined += ",";
    joined += std::to_string(want[i]);
  }
  EXPECT_EQ(ids, joined + "\n");
  EXPECT_EQ(run("echo '" + joined + "' | " + ember::test::ember_binary() + " detokenize --skip-special --tokenizer " + tok_file), "Hello  world");
}

TEST(TokenizerOffsets, ByteLevelOffsetsMatchTheLibrary) {
  // The goldens hold the library's offsets in code points (the Node binding's unit); ember's are
  // byte offsets into the UTF-8 text, converted here.
  size_t checked = 0;
  for (const char* name : {"qwen3", "llama3", "gpt35turbo", "deepseek_v3", "synthetic-bytelevel"}) {
    SCOPED_TRACE(name);
    const Tokenizer& tok = fixture_tokenizer(name);
    auto golden = nlohmann::json::parse(read_file(fixture(std::string("tokenizer_goldens/") + name + ".json")));
    size_t failures = 0, unaligned = 0;
    for (const auto& c : golden["cases"]) {
      std::string text = c["text"];
      std::vector<size_t> char_index(text.size() + 1, 0);  // byte offset -> code point offset
      for (size_t pos = 0, n = 0; pos <= text.size(); pos++) {
        if (pos == text.size() || (static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) char_index[pos] = n++;
        else char_index[pos] = n - 1;
      }
      auto ids = c["ids"].get<std::vector<uint32_t>>();
      auto got = tok.offsets(text, ids);
      if (!got) {  // Qwen3's NFC changes the decomposed-accent cases: no aligned offsets there
        unaligned++;
        continue;
      }
      ASSERT_EQ(got->size(), ids.size());
      std::vector<std::vector<size_t>> mine;
      for (auto [b, e] : *got) mine.push_back({char_index[b], char_index[e]});
      auto want = c["offsets"].get<std::vector<std::vector<size_t>>>();
      if (mine != want && failures++ < 3) {
        for (size_t i = 0; i < want.size(); i++)
          if (mine[i] != want[i]) {
            ADD_FAILURE() << text.substr(0, 80) << "\n token " << i << " (id " << ids[i] << "): got [" << mine[i][0] << ", "
                          << mine[i][1] << ") want [" << want[i][0] << ", " << want[i][1] << ")";
            break;
          }
      }
      checked++;
    }
    EXPECT_EQ(failures, 0u);
    EXPECT_LE(unaligned, std::string(name) == "qwen3" ? 3u : 0u);
  }
  EXPECT_GT(checked, 100u);
  EXPECT_FALSE(fixture_tokenizer("llama2").offsets("hi", {1}).has_value());  // normalizer: not aligned
}

namespace {

struct CliRun {
  int status;
  std::string out;
};
CliRun run_cli(const std::string& args, const std::string& input = "") {
  std::string path = std::filesystem::temp_directory_path() / ("ember_tok_in_" + std::to_string(::getpid()));
  {
    std::ofstream f(path, std::ios::binary);
    f << input;
  }
  std::string out;
  FILE* p = popen((ember::test::ember_binary() + " " + args + " < " + path + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = pclose(p);
  std::filesystem::remove(path);
  return {status, out};
}

}  // namespace

TEST(TokenizerCli, JsonHasIdsPiecesAndByteOffsets) {
  std::string tok_file = fixture("tokenizers/qwen3.json");
  CliRun r = run_cli("tokenize --json --tokenizer " + tok_file, "h\xC3\xA9llo <|im_end|> w");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  const Tokenizer& tok = fixture_tokenizer("qwen3");
  auto ids = tok.encode("h\xC3\xA9llo <|im_end|> w");
  EXPECT_EQ(j["ids"].get<std::vector<uint32_t>>(), ids);
  ASSERT_EQ(j["offsets"].size(), ids.size());
  auto spans = *tok.offsets("h\xC3\xA9llo <|im_end|> w", ids);
  for (size_t i = 0; i < ids.size(); i++) EXPECT_EQ(j["offsets"][i], nlohmann::json({spans[i].first, spans[i].second}));
  EXPECT_EQ(j["text"].size(), ids.size());
  // A tokenizer whose normalizer rewrites the text has no aligned offsets.
  r = run_cli("tokenize --json --tokenizer " + fixture("tokenizers/llama2.json"), "Hello world");
  EXPECT_TRUE(nlohmann::json::parse(r.out)["offsets"].is_null());
}

TEST(TokenizerCli, InvalidUtf8BecomesReplacementCharacters) {
  // As Node's Buffer.toString() before the library: each invalid sequence becomes U+FFFD.
  std::string tok_file = fixture("tokenizers/qwen3.json");
  CliRun r = run_cli("tokenize --ids --tokenizer " + tok_file, "a\xFF b\xE2\x82 c");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("not valid UTF-8"), std::string::npos);
  auto ids = fixture_tokenizer("qwen3").encode("a\xEF\xBF\xBD b\xEF\xBF\xBD c");
  std::string joined;
  for (size_t i = 0; i < ids.size(); i++) {
    if (i) joined += ',';
    joined += std::to_string(ids[i]);
  }
  EXPECT_NE(r.out.find(joined + "\n"), std::string::npos) << r.out;
}

TEST(TokenizerCli, BadInputExitsNonZeroAndSaysWhat) {
  std::string dir = std::filesystem::temp_directory_path() / ("ember_tok_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& json) {
    std::ofstream(dir + "/" + name) << json;
    return dir + "/" + name;
  };
  CliRun r = run_cli("tokenize --ids --text hi --tokenizer " + write("wp.json", tiny_json(R"({"type":"WordPiece","vocab":{"a":0}})")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("unsupported tokenizer model type \"WordPiece\""), std::string::npos) << r.out;
  r = run_cli("tokenize --ids --text hi --tokenizer " + write("ug.json", tiny_json(R"({"type":"Unigram","vocab":[["a",0.0]]})")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("\"Unigram\""), std::string::npos) << r.out;
  r = run_cli("tokenize --ids --text hi --tokenizer " + write("pt.json", tiny_json(kTinyBpe, R"({"type":"UnicodeScripts"})")));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("pre_tokenizer type \"UnicodeScripts\""), std::string::npos) << r.out;
  r = run_cli("tokenize --ids --text hi --tokenizer " + write("nm.json", R"({"model": )" + kTinyBpe + R"(, "normalizer": {"type":"BertNormalizer"}})"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("normalizer type \"BertNormalizer\""), std::string::npos) << r.out;
  r = run_cli("detokenize --ids 0,1,99 --tokenizer " + write("ok.json", tiny_json(kTinyBpe)));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("token id 99 is not in the vocabulary"), std::string::npos) << r.out;
  // cl100k has real gaps: an id inside the range but without a token is refused too.
  r = run_cli("detokenize --ids 100256 --tokenizer " + fixture("tokenizers/gpt35turbo.json"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("token id 100256"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}
