// `ember generate`: one prompt in, streamed text out, with the numbers that matter at the end.
#include <cstdio>
#include <memory>

#include "cli/llm_options.h"
#include "cli/token_ids.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/npy.h"
#include "chat/chat_template.h"
#include "llm/logits.h"
#include "tokenizer/utf8.h"

namespace ember::cli {

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "generate text from a prompt on the GPU, streaming tokens as they come");
  struct Opts {
    LlmOptions llm;
    std::string prompt, prompt_file, tokens_file, dump_logits;
    uint32_t n = 128;
    bool chat = false, json = false, raw = false;
    CLI::Option* prompt_option = nullptr;
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd);
  o->llm.add_context_option(*cmd);
  auto* prompt = cmd->add_option("--prompt,-p", o->prompt, "prompt text");
  auto* file = cmd->add_option("-f,--file", o->prompt_file, "read the prompt text from FILE")->check(CLI::ExistingFile);
  file->excludes(prompt);
  auto* tokens_file = cmd->add_option("--tokens-file", o->tokens_file,
                                      "the prompt as exactly these token ids, a 1-D .npy of int32, int64 or uint32 (no template, no BOS "
                                      "added: as ember logits and transformers' generate take them)");
  cmd->add_option("-n,--max-tokens", o->n, "tokens to generate at most")->capture_default_str();
  auto* chat = cmd->add_flag("--chat", o->chat, "wrap the prompt as one user turn of the chat template");
  auto* raw = cmd->add_flag("--raw", o->raw, "no special tokens added to the prompt (no BOS)");
  tokens_file->excludes(prompt)->excludes(file)->excludes(chat)->excludes(raw);
  o->prompt_option = prompt;
  cmd->add_flag("--json", o->json, "print one JSON object at the end (text, ids, statistics) instead of streaming");
  cmd->add_option("--dump-logits", o->dump_logits,
                  "write every generated step's logits to FILE.npy, f32 [steps, vocab]: what the sampler read, before the "
                  "repetition penalty, temperature and top-k/top-p/min-p (row 0: the prompt's last position)");
  cmd->callback([o] {
    o->llm.finish_sampling("ember generate");
    if (!o->dump_logits.empty()) check_output(formats::npy_output(o->dump_logits, "--dump-logits"));  // before the model loads
    if (o->n < 1) throw Error("-n must be at least 1", "-n");
    const bool from_file = !o->tokens_file.empty();
    if (!o->prompt_file.empty()) {
      o->prompt = read_file(o->prompt_file);
      if (size_t bad = llm::utf8::first_invalid(o->prompt); bad != std::string::npos)
        throw Error("the prompt is not valid UTF-8 (byte " + std::to_string(bad) + ")", "-f " + o->prompt_file, "save it as UTF-8 text");
    }
    if (!from_file && o->prompt_option->count() == 0 && o->prompt_file.empty())
      throw Error("no prompt", "ember generate", "give --prompt TEXT, -f FILE or --tokens-file IDS.npy");
    const std::vector<uint32_t> file_ids = from_file ? read_token_file(o->tokens_file) : std::vector<uint32_t>{};
    llm::Session session(o->llm.model, o->llm.session());
    const auto& tok = session.tokenizer();
    std::vector<uint32_t> prompt = from_file ? file_ids
                                   : o->chat ? llm::encode_lfm2_chat(tok, {{"user", o->prompt}}, true)
                                             : tok.encode(o->prompt, !o->raw);
    if (from_file) llm::check_token_ids(session.model(), prompt, "--tokens-file " + o->tokens_file);
    const uint32_t context = o->llm.context(session.model().capacity());
    if (prompt.size() >= context)
      throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " + std::to_string(context) +
                      " positions (-c, at most maxTotalPositions)",
                  from_file ? "--tokens-file " + o->tokens_file : !o->prompt_file.empty() ? "-f " + o->prompt_file : "--prompt",
                  "shorten the prompt");
    llm::StreamingDetokenizer detok(tok, /*skip_special_tokens=*/true);
    std::vector<uint32_t> ids;
    std::string text;
    llm::GenerateOptions go;
    go.max_tokens = std::min<uint32_t>(o->n, context - static_cast<uint32_t>(prompt.size()));
    go.stop_ids = session.stop_ids();
    std::unique_ptr<formats::NpyRowWriter> dump;
    if (!o->dump_logits.empty()) {
      dump = std::make_unique<formats::NpyRowWriter>(o->dump_logits, formats::NpyDType::F32,
                                                     std::vector<int64_t>{static_cast<int64_t>(session.model().vocab())});
      go.on_logits = [&](std::span<const float> logits) { dump->append_f32(logits); };
    }
    auto stats = session.generator().generate(prompt, o->llm.sampling, go, [&](uint32_t id) {
      ids.push_back(id);
      std::string piece = detok.push(id);
      text += piece;
      if (!o->json) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      }
      return true;
    });
    std::string tail = detok.finish();
    text += tail;
    if (dump) dump->finish();
    const auto& a = session.device().adapter();
    if (o->json) {
      nlohmann::json j = {{"text", text},
                          {"ids", ids},
                          {"prompt_tokens", stats.prompt_tokens},
                          {"generated_tokens", stats.generated},
                          {"ttft_ms", stats.ttft_ms},
                          {"decode_tok_s", stats.decode_tok_s},
                          {"total_ms", stats.total_ms},
                          {"stopped", stats.stopped},
                          {"device", a.name()},
                          {"down_copy", session.model().choices().down_copy()}};
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::fprintf(stdout, "\n");
    std::fprintf(stderr, "\n[%s] prompt %u tokens, generated %u tokens, time to first token %.1f ms, decode %.1f tok/s\n",
                 a.name().c_str(), stats.prompt_tokens, stats.generated, stats.ttft_ms, stats.decode_tok_s);
  });
}

}  // namespace ember::cli
