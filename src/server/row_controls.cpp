#include "server/row_controls.h"

#include "common/error.h"
#include "llm/grammar/gbnf.h"

namespace ember::server {
namespace {

constexpr size_t kCompiledGrammars = 8;  // distinct grammars kept with their mask caches

}  // namespace

RowControlsContext::RowControlsContext(gpu::KernelCache& kernels, const llm::Tokenizer& tokenizer, uint32_t vocab,
                                       std::vector<uint32_t> end_ids)
    : edit_(kernels, vocab), logprobs_(kernels), tokenizer_(tokenizer), vocab_(vocab), end_ids_(std::move(end_ids)) {}

llm::grammar::Matcher RowControlsContext::matcher(const std::string& gbnf) {
  if (!trie_) {
    // Each token's own bytes; special tokens (the end of a turn, ...) are never grammar output.
    std::vector<std::string> bytes(vocab_);
    for (uint32_t t = 0; t < vocab_; t++)
      if (!tokenizer_.is_special(t)) bytes[t] = tokenizer_.decode_bytes({t}, /*skip_special_tokens=*/false);
    trie_ = std::make_shared<llm::grammar::TokenTrie>(bytes);
  }
  auto it = compiled_.find(gbnf);
  if (it == compiled_.end()) {
    if (compiled_.size() >= kCompiledGrammars) compiled_.clear();
    it = compiled_.emplace(gbnf, Compiled{llm::grammar::parse_gbnf(gbnf), std::make_shared<llm::grammar::MaskCache>()}).first;
  }
  return llm::grammar::Matcher(it->second.grammar, trie_, it->second.cache);
}

RowControls::RowControls(RowControlsContext& context, const gpu::Device& device, gpu::Binding own_logits, const gpu::Binding* batch_logits,
                         gpu::Binding tokens)
    : context_(context), device_(device) {
  edit_buffer_ = device.create_storage(context.edit().buffer_bytes(), "slot.logit_edit");
  lp_params_ = device.create_storage(sizeof(kernels::LogprobParams), "slot.logprobs.params");
  lp_out_ = device.create_storage(kernels::Logprobs::kOutBytes, "slot.logprobs.out");
  edit_own_ = context.edit().bind(own_logits, {&edit_buffer_});
  lp_own_ = context.logprobs().bind(own_logits, tokens, {&lp_params_}, {&lp_out_});
  if (batch_logits) {
    edit_batch_ = context.edit().bind(*batch_logits, {&edit_buffer_});
    lp_batch_ = context.logprobs().bind(*batch_logits, tokens, {&lp_params_}, {&lp_out_});
  }
}

void RowControls::start(const JobRequest& request) {
  matcher_.reset();
  if (!request.grammar.empty()) matcher_ = context_.matcher(request.grammar);
  bias_ = request.logit_bias;
  logprobs_ = request.logprobs;
  top_ = request.top_logprobs;
}

void RowControls::prepare() {
  if (!matcher_ && bias_.empty()) return;
  const auto& edit = context_.edit();
  std::vector<uint32_t> mask;
  if (matcher_) {
    mask = matcher_->allowed();
    mask.resize(edit.mask_words(), 0);  // the trie covers the tokenizer's ids, the sampler `vocab`
    if (matcher_->can_end())
      for (uint32_t id : context_.end_ids())
        if (id < edit.vocab()) mask[id / 32] |= 1u << (id % 32);
    bool any = false;
    for (uint32_t w : mask) any = any || w != 0;
    if (!any)
      throw Error("no token of the vocabulary can continue the grammar here", "grammar",
                  "write the grammar so that the model's tokens can spell every string it allows");
  }
  const auto words = edit.pack(mask, bias_);
  device_.upload(edit_buffer_, std::span<const uint32_t>(words));
}

void RowControls::record_edit(gpu::Recorder& rec, bool from_batch) const {
  if (!matcher_ && bias_.empty()) return;
  context_.edit().record(rec, from_batch ? edit_batch_ : edit_own_, matcher_.has_value(), static_cast<uint32_t>(bias_.size()));
}

void RowControls::record_logprobs(gpu::Recorder& rec, bool from_batch, uint32_t slot, const gpu::Buffer& out, uint64_t out_offset) {
  if (!logprobs_) return;
  const kernels::LogprobParams p{.vocab = context_.edit().vocab(), .slot = slot, .top = top_};
  device_.upload(lp_params_, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p), sizeof p));
  context_.logprobs().record(rec, from_batch ? lp_batch_ : lp_own_);
  rec.copy(lp_out_, 0, out, out_offset, kernels::Logprobs::kOutBytes);
}

bool RowControls::accept(uint32_t id) { return !matcher_ || matcher_->accept(id); }

}  // namespace ember::server
