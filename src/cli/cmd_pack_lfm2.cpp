// `ember pack lfm2`: Hugging Face LFM2 checkpoint -> LLM runtime pack.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "formats/lfm2_packer.h"

namespace ember::cli {

void add_pack_lfm2_command(CLI::App& app) {
  CLI::App* group = subcommand_group(app, "pack", "convert checkpoints into ember packs");
  auto* cmd = group->add_subcommand("lfm2", "Hugging Face LFM2 directory -> runtime.json + weights.bin + tokenizer.json");
  struct Args {
    std::string from, out;
    formats::Lfm2PackOptions opts;
    bool quiet = false, force = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--from", a->from, "Hugging Face model directory (config.json, *.safetensors, tokenizer.json)")->required();
  cmd->add_option("--out", a->out, "pack directory (written atomically)")->required();
  cmd->add_option("--max-positions", a->opts.max_positions_cap, "cap on the rope table length")->capture_default_str();
  cmd->add_option("--max-total-positions", a->opts.max_total_positions, "KV capacity (prompt + generated)")->capture_default_str();
  cmd->add_flag("--quiet", a->quiet, "print only the summary");
  cmd->add_flag("--force", a->force, "replace --out if it holds a previous LLM pack (nothing else is ever replaced)");
  cmd->callback([a] {
    a->opts.log = a->quiet ? nullptr : &std::cout;
    OutputTarget out(a->out);
    out.force = a->force;
    formats::Lfm2PackReport r = formats::pack_lfm2(a->from, out, a->opts);
    double worst = 0;
    for (const auto& m : r.matrices) worst = std::max(worst, m.rel_l2);
    std::printf("packed %zu matrices (worst rel_l2 %.4f), %llu bytes of weights; down weight: down.quant (default candidate, mlpPair false)\n",
                r.matrices.size(), worst, static_cast<unsigned long long>(r.layout.weight_bytes));
  });
}

}  // namespace ember::cli
