#include "formats/lfm2_synth.h"

#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "chat/lfm2_chat_template.h"

namespace ember::formats {
namespace fs = std::filesystem;
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Standard normal values from (seed, name) by Box-Muller.
std::vector<float> normal_values(size_t n, uint64_t seed, const std::string& name, float mean, float stddev) {
  uint64_t state = seed * 0x2545F4914F6CDD1Dull ^ name_hash(name);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    double u1 = (static_cast<double>(splitmix(state) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    double u2 = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    v[i] = mean + stddev * static_cast<float>(r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) v[i + 1] = mean + stddev * static_cast<float>(r * std::sin(2 * M_PI * u2));
  }
  return v;
}

std::vector<uint8_t> encode(const std::vector<float>& v, bool bf16) {
  if (!bf16) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); i++) {
    uint16_t h = f32_to_bf16(v[i]);
    std::memcpy(b.data() + 2 * i, &h, 2);
  }
  return b;
}

// GPT-2's byte-to-unicode table: printable bytes stand for themselves, the others are moved
// to U+0100 and up, so every byte has a visible character.
std::string byte_char(int b) {
  int cp;
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
    cp = b;
  } else {
    int n = 0;
    for (int x = 0; x < b; x++)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

std::string byte_level_tokenizer_json() {
  const char* specials[] = {"<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  OrderedJson vocab = OrderedJson::object();
  OrderedJson added = OrderedJson::array();
  int id = 0;
  for (const char* s : specials) {
    added.push_back({{"id", id}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
    vocab[s] = id++;
  }
  for (int b = 0; b < 256; b++) vocab[byte_char(b)] = id++;
  const std::string sp = byte_char(' ');  // "Ġ"
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sp, "t"}, {"h", "e"}, {sp + "t", "he"}, {"i", "n"}, {sp, "a"}, {"e", "r"}, {"o", "n"}, {"r", "e"},
      {"a", "n"}, {sp, "s"}, {sp, "w"}, {"o", "r"}, {"e", "n"}, {sp, "o"}, {sp, "i"}, {"l", "l"},
      {sp, "h"}, {"e", "s"}, {"i", "s"}, {"o", "u"}, {sp + "a", "n"}, {"in", "g"}, {sp + "i", "s"}};
  OrderedJson merge_list = OrderedJson::array();
  for (const auto& [a, b] : merges) {
    merge_list.push_back(a + " " + b);
    if (!vocab.contains(a + b)) vocab[a + b] = id++;
  }
  // LFM2's tool markers, last so that every other id stays where it was: the chat template lists
  // tools with them and the model calls tools with them.
  for (const char* s : {"<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>", "<|tool_call_end|>",
                        "<|tool_response_start|>", "<|tool_response_end|>"}) {
    added.push_back({{"id", id}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
    vocab[s] = id++;
  }
  OrderedJson byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  OrderedJson j = {{"version", "1.0"},
                   {"truncation", nullptr},
                   {"padding", nullptr},
                   {"added_tokens", added},
                   {"normalizer", nullptr},
                   {"pre_tokenizer", byte_level},
                   {"post_processor", byte_level},
                   {"decoder", byte_level},
                   {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                              {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                              {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                              {"vocab", vocab}, {"merges", merge_list}}}};
  return j.dump(2);
}

std::string lfm2_tokenizer_config_json() {
  OrderedJson j = {{"bos_token", "<|startoftext|>"}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|pad|>"},
                   {"chat_template", llm::lfm2_chat_template_source()}};
  return j.dump(2) + "\n";
}

OutputKind lfm2_checkpoint_output() {
  return {"LFM2 checkpoint written by ember", true, [](const fs::path& dir) {
            static const std::set<std::string> kFiles = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};
            for (const auto& e : fs::directory_iterator(dir))
              if (!kFiles.count(e.path().filename().string())) return false;
            return is_ember_safetensors(dir / "model.safetensors", kLfm2CheckpointId);
          }};
}

void synth_lfm2_checkpoint(const Lfm2Config& config, const OutputTarget& out, const Lfm2SynthOptions& opts) {
  OutputTarget target = out;
  target.kind = lfm2_checkpoint_output();
  if (!opts.tokenizer.empty()) target.inputs.emplace_back("--tokenizer", opts.tokenizer);
  check_output(target);
  std::string tokenizer = opts.tokenizer.empty() ? byte_level_tokenizer_json() : read_file(opts.tokenizer);
  std::vector<HfTensorSpec> specs = lfm2_tensor_specs(config);
  std::vector<TensorToWrite> tensors(specs.size());
  // Tensors are independent streams: fill them on all cores.
  auto fill = [&](size_t first, size_t step) {
    for (size_t i = first; i < specs.size(); i += step) {
      const HfTensorSpec& s = specs[i];
      size_t n = 1;
      for (int64_t d : s.shape) n *= static_cast<size_t>(d);
      std::vector<float> v;
      switch (s.role) {
        case HfTensorSpec::Matrix: v = normal_values(n, opts.seed, s.name, 0.0f, 0.8f / std::sqrt(static_cast<float>(s.shape[1]))); break;
        case HfTensorSpec::Embedding: v = normal_values(n, opts.seed, s.name, 0.0f, 0.05f); break;
        case HfTensorSpec::Norm: v = normal_values(n, opts.seed, s.name, 1.0f, 0.1f); break;
        case HfTensorSpec::ConvTaps: v = normal_values(n, opts.seed, s.name, 0.0f, 0.3f); break;
      }
      tensors[i] = {s.name, opts.bf16 ? DType::BF16 : DType::F32, s.shape, encode(v, opts.bf16)};
    }
  };
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; t++) pool.emplace_back(fill, t, threads);
  for (auto& th : pool) th.join();

  write_output_directory(target, [&](const fs::path& tmp) {
    write_file_atomic(tmp / "config.json", to_json(config, opts.bf16 ? "bfloat16" : "float32").dump(2) + "\n");
    write_safetensors(tmp / "model.safetensors", tensors, {{"format", "pt"}, {kEmberOutputKey, kLfm2CheckpointId}});
    write_file_atomic(tmp / "tokenizer.json", tokenizer);
    write_file_atomic(tmp / "tokenizer_config.json", lfm2_tokenizer_config_json());
  });
}

}  // namespace ember::formats
