// `ember`: a WebGPU inference runtime. Subcommands are registered from src/cli/cmd_*.cpp.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/llama_compat.h"
#include "common/error.h"
#include "common/version.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: generative models on any WebGPU GPU (Dawn, WGSL compute shaders)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ember ") + ember::kEmberVersion, "print ember's version and exit");
  app.add_subcommand("version", "print ember's version")->callback([] { std::printf("ember %s\n", ember::kEmberVersion); });
  ember::cli::add_devices_command(app);
  ember::cli::add_bench_command(app);
  ember::cli::add_tune_command(app);
  ember::cli::add_pack_lfm2_command(app);
  ember::cli::add_synth_lfm2_command(app);
  ember::cli::add_inspect_command(app);
  ember::cli::add_synth_trellis_command(app);
  ember::cli::add_synth_clip_text_command(app);
  ember::cli::add_encode_text_command(app);
  ember::cli::add_pack_trellis_command(app);
  ember::cli::add_dequant_command(app);
  ember::cli::add_generate_command(app);
  ember::cli::add_logits_command(app);
  ember::cli::add_chat_command(app);
  ember::cli::add_tokenize_command(app);
  ember::cli::add_detokenize_command(app);
  ember::cli::add_chat_template_command(app);
  ember::cli::add_ss_flow_command(app);
  ember::cli::add_ss_flow_forward_command(app);
  ember::cli::add_serve_command(app);
  ember::cli::add_ss_decode_command(app);
  ember::cli::add_text_to_3d_command(app);
  ember::cli::add_synth_pipeline_command(app);
  std::vector<std::string> args(argv, argv + argc);
  ember::cli::rewrite_llama_cpp_flags(args);
  std::vector<char*> rewritten;
  for (auto& a : args) rewritten.push_back(a.data());
  try {
    app.parse(argc, rewritten.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "ember: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
