// What a sequence slot of the scheduler adds around its GPU sample for a request that asks for it
// (docs/structured-output.md): before the sampler, the logit edit (logit_bias, and the grammar's
// allowed tokens as a bitmask, recomputed from the grammar state each step); after it, the
// logprobs of the sampled token and the best alternatives, copied out with the id. A request
// without any of these records nothing extra.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/recorder.h"
#include "kernels/logit_edit.h"
#include "kernels/logprobs.h"
#include "llm/grammar/matcher.h"
#include "tokenizer/tokenizer.h"
#include "server/job.h"

namespace ember::server {

// Shared by every slot (the scheduler thread only): the kernels, the vocabulary's trie (built on
// the first constrained request) and the grammars compiled lately with their mask caches.
class RowControlsContext {
 public:
  RowControlsContext(gpu::KernelCache& kernels, const llm::Tokenizer& tokenizer, uint32_t vocab, std::vector<uint32_t> end_ids);
  const kernels::LogitEdit& edit() const { return edit_; }
  const kernels::Logprobs& logprobs() const { return logprobs_; }
  const std::vector<uint32_t>& end_ids() const { return end_ids_; }
  // A matcher at the start of `gbnf` (throws ember::Error where it does not parse).
  llm::grammar::Matcher matcher(const std::string& gbnf);

 private:
  struct Compiled {
    std::shared_ptr<const llm::grammar::Grammar> grammar;
    std::shared_ptr<llm::grammar::MaskCache> cache;
  };
  kernels::LogitEdit edit_;
  kernels::Logprobs logprobs_;
  const llm::Tokenizer& tokenizer_;
  uint32_t vocab_;
  std::vector<uint32_t> end_ids_;
  std::shared_ptr<const llm::grammar::TokenTrie> trie_;
  std::map<std::string, Compiled> compiled_;
};

class RowControls {
 public:
  // own_logits / batch_logits: the two rows the slot samples from (its model's logits, its row of
  // the batched decoder's; null where there is no batched decoder); tokens: its model's ids.
  RowControls(RowControlsContext& context, const gpu::Device& device, gpu::Binding own_logits, const gpu::Binding* batch_logits,
              gpu::Binding tokens);

  // A new job in the slot (throws ember::Error on a grammar that does not parse).
  void start(const JobRequest& request);
  bool constrained() const { return matcher_.has_value(); }
  bool logprobs() const { return logprobs_; }

  // Before recording a step: uploads this step's edit (none without bias or grammar). Throws
  // where the grammar can neither go on nor end with any token of the vocabulary.
  void prepare();
  // Just before the sampler: the edit prepare() uploaded.
  void record_edit(gpu::Recorder& rec, bool from_batch) const;
  // After the sampler wrote tokens[slot]: records the logprobs and their copy into `out`.
  void record_logprobs(gpu::Recorder& rec, bool from_batch, uint32_t slot, const gpu::Buffer& out, uint64_t out_offset);
  // The sampled id (not an end id) read back: advances the grammar; false where it refuses it.
  bool accept(uint32_t id);

 private:
  RowControlsContext& context_;
  const gpu::Device& device_;
  gpu::Buffer edit_buffer_, lp_params_, lp_out_;
  kernels::LogitEdit::Groups edit_own_, edit_batch_;
  gpu::BindGroup lp_own_, lp_batch_;
  std::optional<llm::grammar::Matcher> matcher_;
  std::vector<std::pair<uint32_t, float>> bias_;
  bool logprobs_ = false;
  uint32_t top_ = 0;
};

}  // namespace ember::server
