// `ember synth clip-text`: a random-weight Hugging Face CLIPTextModel checkpoint directory
// (config.json, model.safetensors, tokenizer.json) that transformers loads strictly, so tests and
// the upstream goldens go through the real packer.
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "trellis/clip_checkpoint.h"

namespace ember::cli {

void add_synth_clip_text_command(CLI::App& app) {
  CLI::App* synth = subcommand_group(app, "synth", "write random-weight checkpoints in upstream formats");
  auto* cmd = synth->add_subcommand("clip-text", "CLIP text model checkpoint directory (config.json, model.safetensors, tokenizer.json)");
  struct Args {
    std::string shape = "vit-l14", out;
    bool f16 = false;
    uint64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->shape, "vit-l14 (openai/clip-vit-large-patch14's text model) or tiny (2 layers, 128 wide, for tests)")
      ->check(CLI::IsMember({"vit-l14", "tiny"}))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "random seed")->capture_default_str();
  cmd->add_flag("--f16", a->f16, "store tensors as F16 instead of F32");
  cmd->add_option("--out", a->out, "output directory (must not exist)")->required();
  cmd->callback([a] {
    const auto c = a->shape == "tiny" ? formats::clip_tiny_text_config() : formats::clip_vit_l14_text_config();
    trellis::write_synth_clip_checkpoint(a->out, c, a->seed, a->f16);
    std::printf("wrote %s: CLIPTextModel %lld wide, %lld layers, %lld heads, vocabulary %lld, %s, seed %llu\n", a->out.c_str(),
                static_cast<long long>(c.hidden_size), static_cast<long long>(c.num_hidden_layers),
                static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.vocab_size), a->f16 ? "F16" : "F32",
                static_cast<unsigned long long>(a->seed));
  });
}

}  // namespace ember::cli
