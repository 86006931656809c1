#include "trellis/clip_checkpoint.h"

#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace ember::trellis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// Words the synthetic tokenizer spells with merges (the rest falls back to single bytes).
constexpr const char* kWords[] = {
    "a", "an", "the", "of", "and", "with", "on", "in", "photo", "3d", "model", "chair", "table", "shaped", "like",
    "avocado", "red", "blue", "green", "wooden", "metal", "cat", "dog", "house", "car", "toy", "small", "large",
    "old", "new", "lamp", "cup", "robot", "tree", "rock", "castle", "ship", "sword", "helmet", "vase"};

}  // namespace

ClipCheckpoint open_clip_checkpoint(const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw Error("not a directory", dir.string(), "pass the directory of a Hugging Face CLIP checkpoint (config.json, model.safetensors, tokenizer.json)");
  ClipCheckpoint c;
  c.dir = dir;
  const fs::path config_path = dir / kConfigFile, weights_path = dir / "model.safetensors", tok_path = dir / kTokenizerFile;
  if (!fs::is_regular_file(config_path))
    throw Error("no config.json", dir.string(), "a Hugging Face checkpoint directory holds config.json beside model.safetensors");
  json cj;
  try {
    cj = json::parse(read_file(config_path));
  } catch (const json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), config_path.string(), "fix or re-download config.json");
  }
  c.config = formats::parse_clip_text_config(cj, config_path.string());
  if (!fs::is_regular_file(weights_path)) {
    if (fs::exists(dir / "model.safetensors.index.json"))
      throw Error("the weights are sharded (model.safetensors.index.json)", dir.string(),
                  "save the checkpoint as one model.safetensors (save_pretrained(..., max_shard_size=\"10GB\"))");
    throw Error("no model.safetensors", dir.string(), "save the checkpoint with safetensors (save_pretrained does by default)");
  }
  if (!fs::is_regular_file(tok_path))
    throw Error("no tokenizer.json", dir.string(),
                "the text encoder stage needs the checkpoint's tokenizer.json (the fast tokenizer's file; "
                "openai/clip-vit-large-patch14 ships one)");
  c.weights = formats::SafetensorsFile::open(weights_path);
  const auto shapes = formats::clip_text_tensor_shapes(c.config);
  for (const auto& [name, shape] : shapes) {
    if (!c.weights.has(name))
      throw Error("tensor '" + name + "' is missing", weights_path.string(),
                  "the checkpoint is not a CLIP text model or is incomplete (CLIPTextModel's state-dict names are expected)");
    const auto& info = c.weights.info(name);
    if (info.shape != shape)
      throw Error("tensor '" + name + "' has shape " + json(info.shape).dump() + ", config.json implies " + json(shape).dump(),
                  weights_path.string(), "config.json and model.safetensors are of different models");
    if (info.dtype != formats::DType::F32 && info.dtype != formats::DType::F16 && info.dtype != formats::DType::BF16)
      throw Error("tensor '" + name + "' is " + formats::dtype_name(info.dtype) + ", not F32, F16 or BF16", weights_path.string());
  }
  for (const auto& [name, info] : c.weights.tensors())
    if (!shapes.count(name)) c.ignored.push_back(name);
  c.tokenizer_json = read_file(tok_path);
  auto tok = llm::Tokenizer::from_json_text(c.tokenizer_json, tok_path.string());
  for (const char* special : {"<|startoftext|>", "<|endoftext|>"})
    if (!tok.token_to_id(special))
      throw Error(std::string("the tokenizer has no ") + special + " token", tok_path.string(), "use the CLIP checkpoint's own tokenizer.json");
  if (int64_t(tok.vocab_size()) > c.config.vocab_size)
    throw Error("the tokenizer's ids reach " + std::to_string(tok.vocab_size() - 1) + ", the model's vocabulary has " +
                    std::to_string(c.config.vocab_size) + " rows",
                tok_path.string(), "the tokenizer is of another model");
  if (tok.special_prefix().empty())
    throw Error("the tokenizer's post-processor adds no <|startoftext|>", tok_path.string(), "use the CLIP checkpoint's own tokenizer.json");
  return c;
}

std::vector<formats::TensorPackReport> pack_clip_text_stage(const ClipCheckpoint& ckpt, const OutputTarget& out,
                                                            formats::StagePackOptions o) {
  o.stage = kTextEncoderStage;
  o.side_files[kTokenizerFile] = ckpt.tokenizer_json;
  o.side_files[kConfigFile] = ckpt.config.to_json().dump(2) + "\n";
  return formats::write_stage_pack(out, formats::clip_text_tensor_shapes(ckpt.config),
                                   [&](const std::string& n) { return ckpt.weights.to_f32(n); }, o);
}

std::string synth_clip_tokenizer_json(const formats::ClipTextConfig& c) {
  std::vector<std::string> chars(256);
  for (int b = 0; b < 256; b++) chars[size_t(b)] = utf8(llm::byte_level::char_of_byte(uint8_t(b)));
  json vocab = json::object();
  int64_t next = 0;
  for (const auto& ch : chars) vocab[ch] = next++;
  for (const auto& ch : chars) vocab[ch + "</w>"] = next++;
  json merges = json::array();
  for (const char* w : kWords) {
    std::vector<std::string> spelled;
    for (unsigned char b : std::string(w)) spelled.push_back(chars[b]);
    spelled.back() += "</w>";
    std::string left = spelled[0];
    for (size_t i = 1; i < spelled.size(); i++) {
      if (!vocab.contains(left + spelled[i])) {
        merges.push_back(left + " " + spelled[i]);
        vocab[left + spelled[i]] = next++;
      }
      left += spelled[i];
    }
  }
  if (next > std::min(c.bos_token_id, c.eos_token_id) || c.bos_token_id == c.eos_token_id || c.eos_token_id >= c.vocab_size ||
      c.bos_token_id >= c.vocab_size)
    throw Error("the synthetic tokenizer needs " + std::to_string(next) + " ids below distinct bos/eos ids inside the vocabulary",
                "synth_clip_tokenizer_json");
  vocab["<|startoftext|>"] = c.bos_token_id;
  vocab["<|endoftext|>"] = c.eos_token_id;
  auto added = [](int64_t id, const char* content) {
    return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                {"normalized", true}, {"special", true}};
  };
  nlohmann::ordered_json t;
  t["version"] = "1.0";
  t["truncation"] = nullptr;
  t["padding"] = nullptr;
  t["added_tokens"] = {added(c.bos_token_id, "<|startoftext|>"), added(c.eos_token_id, "<|endoftext|>")};
  t["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "NFC"}}, {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                                      {{"type", "Lowercase"}}}}};
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+"}}},
         {"behavior", "Removed"},
         {"invert", true}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  t["post_processor"] = {{"type", "RobertaProcessing"},
                         {"sep", {"<|endoftext|>", c.eos_token_id}},
                         {"cls", {"<|startoftext|>", c.bos_token_id}},
                         {"trim_offsets", false},
                         {"add_prefix_space", false}};
  t["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  t["model"] = {{"type", "BPE"},           {"dropout", nullptr},       {"unk_token", "<|endoftext|>"},
                {"continuing_subword_prefix", ""}, {"end_of_word_suffix", "</w>"}, {"fuse_unk", false},
                {"byte_fallback", false},  {"vocab", vocab},           {"merges", merges}};
  return t.dump() + "\n";
}

void write_synth_clip_checkpoint(const fs::path& dir, const formats::ClipTextConfig& c, uint64_t seed, bool f16) {
  if (fs::exists(dir)) throw Error("already exists", dir.string(), "choose a new --out directory (ember does not overwrite it)");
  const auto shapes = formats::clip_text_tensor_shapes(c);
  auto weights = formats::synth_clip_text_weights(c, seed);
  const std::string tokenizer = synth_clip_tokenizer_json(c);
  build_directory_atomic(dir, [&](const fs::path& tmp) {
    std::vector<formats::TensorToWrite> out;
    for (auto& [name, v] : weights) out.push_back(formats::float_tensor(name, shapes.at(name), v, f16));
    formats::write_safetensors(tmp / "model.safetensors", out, {{"format", "pt"}, {"ember_synth_seed", std::to_string(seed)}});
    write_file_atomic(tmp / kConfigFile, c.to_json(f16 ? "float16" : "float32").dump(2) + "\n");
    write_file_atomic(tmp / kTokenizerFile, tokenizer);
  });
}

}  // namespace ember::trellis
