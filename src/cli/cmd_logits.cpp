// `ember logits`: the model's logits over exactly the token ids given (no chat template, no BOS
// unless --bos), as a .npy [positions, vocab] f32, for comparison with transformers on the
// same ids. Prefill path by default; --decode runs token by token through the decode path.
#include <cstdio>

#include "cli/llm_options.h"
#include "cli/token_ids.h"
#include "common/error.h"
#include "formats/npy.h"
#include "llm/logits.h"

namespace ember::cli {
namespace {

// The BOS `--bos` puts first: what the tokenizer's post-processor puts before a text, else
// LFM2's <|startoftext|> (tokenizers whose post-processor adds nothing, as the chat template
// writes it itself).
std::vector<uint32_t> bos_ids(const llm::Tokenizer& tok) {
  if (!tok.special_prefix().empty()) return tok.special_prefix();
  if (auto id = tok.token_to_id("<|startoftext|>")) return {*id};
  throw Error("the tokenizer has no BOS: its post-processor adds none and there is no <|startoftext|> token", "--bos",
              "leave out --bos, or put the BOS id into --tokens yourself");
}

}  // namespace

void add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "write the logits of exactly the given token ids as .npy [positions, vocab] f32");
  struct Opts {
    LlmOptions llm;
    std::string tokens, tokens_file, prompt, out, positions = "all";
    bool decode = false, bos = false;
    uint32_t chunk = 256;
    std::vector<CLI::Option*> given;  // --tokens, --tokens-file, --prompt
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd, /*with_sampling=*/false);
  auto* t = cmd->add_option("--tokens", o->tokens, "token ids, comma-separated: 1,2,3");
  auto* f = cmd->add_option("--tokens-file", o->tokens_file, "token ids from a 1-D .npy of int32, int64 or uint32");
  auto* p = cmd->add_option("--prompt", o->prompt, "text, tokenized as is (no chat template; no BOS unless --bos)");
  t->excludes(f)->excludes(p);
  f->excludes(p);
  o->given = {t, f, p};
  cmd->add_option("--out", o->out, "output LOGITS.npy: f32 [positions, vocab] (numpy: np.load)")->required();
  cmd->add_option("--positions", o->positions, "all: a row per token; last: only the last token's row")
      ->check(CLI::IsMember({"all", "last"}))
      ->capture_default_str();
  cmd->add_flag("--decode", o->decode, "run token by token through the decode kernels instead of the chunked prefill");
  cmd->add_flag("--bos", o->bos, "put the BOS first: what the tokenizer's post-processor puts before a text, else <|startoftext|>");
  cmd->add_option("--chunk", o->chunk, "tokens per prefill submit")->capture_default_str()->check(CLI::Range(1u, 4096u));
  cmd->callback([o] {
    const bool from_list = o->given[0]->count() > 0, from_file = o->given[1]->count() > 0, from_prompt = o->given[2]->count() > 0;
    if (!from_list && !from_file && !from_prompt)
      throw Error("no input", "ember logits", "give --tokens 1,2,3, --tokens-file IDS.npy or --prompt TEXT");
    const std::string source = from_list ? "--tokens" : from_file ? "--tokens-file " + o->tokens_file : "--prompt";
    std::vector<uint32_t> given = from_list ? parse_token_list(o->tokens) : from_file ? read_token_file(o->tokens_file) : std::vector<uint32_t>{};
    check_output(formats::npy_output(o->out, "--out"));  // before the model is loaded
    llm::SessionOptions so = o->llm.session();
    so.model.prefill_chunk = o->chunk;
    llm::Session session(o->llm.model, so);
    const auto& tok = session.tokenizer();
    std::vector<uint32_t> ids;
    if (o->bos) ids = bos_ids(tok);
    if (from_prompt) {
      auto text_ids = tok.encode(o->prompt, /*add_special_tokens=*/false);
      ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    } else {
      ids.insert(ids.end(), given.begin(), given.end());
    }
    auto& model = session.model();
    llm::check_token_ids(model, ids, source);
    llm::LogitsOptions lo{.all_positions = o->positions == "all", .decode = o->decode};
    formats::NpyRowWriter writer(o->out, formats::NpyDType::F32, {static_cast<int64_t>(model.vocab())});
    llm::compute_logits(model, ids, lo, [&](uint32_t, std::span<const float> rows) { writer.append_f32(rows); });
    writer.finish();
    if (!o->llm.quiet)
      std::fprintf(stderr, "wrote %s: f32 [%lld, %u] logits of %zu tokens (%s path, %s positions, mlp.down.%s)\n", o->out.c_str(),
                   static_cast<long long>(writer.rows()), model.vocab(), ids.size(), o->decode ? "decode" : "prefill",
                   o->positions.c_str(), model.choices().down_copy());
  });
}

}  // namespace ember::cli
