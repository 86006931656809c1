// `ember chat`: interactive multi-turn chat; the conversation lives in the model's caches, so
// each turn only prefills the new message. Ctrl-C stops a reply and returns to the prompt (the
// conversation stays); Ctrl-C at the prompt ends the chat.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>

#include "cli/llm_options.h"
#include "common/error.h"
#include "chat/chat_template.h"

namespace ember::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) { g_interrupted = true; }

// SIGINT sets a flag instead of ending the process; without SA_RESTART a read at the prompt
// returns, so the loop sees the flag there too.
void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "interactive chat (/reset starts over, /exit quits)");
  struct Opts {
    LlmOptions llm;
    std::string system;
    uint32_t n = 512;
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd);
  o->llm.add_context_option(*cmd);
  cmd->add_option("--system", o->system, "system prompt");
  cmd->add_option("-n,--max-tokens", o->n, "tokens per reply at most")->capture_default_str();
  cmd->callback([o] {
    o->llm.finish_sampling("ember chat");
    llm::Session session(o->llm.model, o->llm.session());
    const auto& tok = session.tokenizer();
    auto& model = session.model();
    const uint32_t context = o->llm.context(model.capacity());
    bool first_turn = true, stopped = false;
    catch_interrupts();
    std::fprintf(stderr, "ember chat on %s: type a message; /reset starts over, /exit quits.\n", session.device().adapter().name().c_str());
    std::string line;
    while (true) {
      g_interrupted = false;
      std::fprintf(stdout, "> ");
      std::fflush(stdout);
      if (g_interrupted || !std::getline(std::cin, line) || line == "/exit" || g_interrupted) {
        if (g_interrupted) std::fprintf(stdout, "\n");
        break;
      }
      if (line == "/reset") {
        session.generator().reset();
        first_turn = true;
        stopped = false;
        std::fprintf(stdout, "(conversation cleared)\n");
        continue;
      }
      if (line.empty()) continue;
      std::vector<llm::ChatMessage> turn;
      if (first_turn && !o->system.empty()) turn.push_back({"system", o->system});
      turn.push_back({"user", line});
      // The first turn renders the template from the start (<|startoftext|>); later turns only
      // their own part: the reply's <|im_end|> is still pending (sampled, not yet in the cache).
      std::string text = llm::render_lfm2_chat(turn, true);
      if (!first_turn) {
        const std::string bos = "<|startoftext|>";
        if (text.rfind(bos, 0) == 0) text = text.substr(bos.size());
        // A reply stopped by Ctrl-C never sampled its <|im_end|>: close the turn here.
        text = (stopped ? "<|im_end|>\n" : "\n") + text;
      }
      std::vector<uint32_t> ids = tok.encode(text, false);
      if (model.position() + ids.size() + 1 >= context) {
        std::fprintf(stdout, "(the context is full: %u of %u positions used; /reset to start over)\n", model.position(), context);
        continue;
      }
      llm::StreamingDetokenizer detok(tok, true);
      const uint32_t room = context - model.position() - static_cast<uint32_t>(ids.size());
      llm::GenerateOptions go{.max_tokens = std::min(o->n, room), .stop_ids = session.stop_ids(), .in_flight = 1};
      auto stats = session.generator().generate(ids, o->llm.sampling, go, [&](uint32_t id) {
        std::string piece = detok.push(id);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return !g_interrupted.load();
      });
      stopped = g_interrupted.exchange(false);
      std::string tail = detok.finish();
      std::fwrite(tail.data(), 1, tail.size(), stdout);
      std::fprintf(stdout, stopped ? " [stopped]\n" : "\n");
      std::fprintf(stderr, "[%u tokens, %.1f tok/s, %u/%u positions]\n", stats.generated, stats.decode_tok_s, model.position(), context);
      first_turn = false;
    }
  });
}

}  // namespace ember::cli
