// `ember synth lfm2`: a random-weight LFM2 checkpoint in Hugging Face's format.
#include <cstdio>

#include "cli/commands.h"
#include "formats/lfm2_synth.h"

namespace ember::cli {

void add_synth_lfm2_command(CLI::App& app) {
  CLI::App* group = subcommand_group(app, "synth", "write random-weight checkpoints in upstream formats");
  auto* cmd = group->add_subcommand("lfm2", "a Hugging Face LFM2 directory: config.json, model.safetensors, tokenizer.json");
  struct Args {
    std::string shape = "tiny", out, tokenizer;
    int64_t seed = 0;
    bool bf16 = false, force = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--shape", a->shape, "seed (seed 000's shape) or tiny")->capture_default_str();
  add_seed_option(*cmd, a->seed, "random seed")->capture_default_str();
  cmd->add_option("--out", a->out, "output directory (written atomically)")->required();
  cmd->add_option("--tokenizer", a->tokenizer, "copy this tokenizer.json (default: a small byte-level BPE one)");
  cmd->add_flag("--bf16", a->bf16, "store tensors as BF16 (default F32)");
  cmd->add_flag("--force", a->force, "replace --out if it holds a checkpoint ember wrote (nothing else is ever replaced)");
  cmd->callback([a] {
    formats::Lfm2Config config = formats::lfm2_preset(a->shape);
    formats::Lfm2SynthOptions opts;
    opts.seed = resolve_seed(a->seed, "ember synth lfm2");
    opts.bf16 = a->bf16;
    opts.tokenizer = a->tokenizer;
    OutputTarget out(a->out);
    out.force = a->force;
    formats::synth_lfm2_checkpoint(config, out, opts);
    std::printf("wrote %s: LFM2 '%s' shape, %zu layers, hidden %lld, ffn %lld, vocab %lld, %s, seed %llu\n", a->out.c_str(),
                a->shape.c_str(), config.layer_types.size(), static_cast<long long>(config.hidden_size),
                static_cast<long long>(config.ffn()), static_cast<long long>(config.vocab_size), a->bf16 ? "BF16" : "F32",
                static_cast<unsigned long long>(opts.seed));
  });
}

}  // namespace ember::cli
