// The logits of a given token sequence, for checking ember against another implementation on
// the same ids (`ember logits`): no template, no BOS, exactly the ids given, through the same
// kernels generation uses.
#pragma once

#include <span>
#include <string>

#include "llm/lfm2_model.h"

namespace ember::llm {

struct LogitsOptions {
  bool all_positions = true;  // false: only the last position's logits
  bool decode = false;        // token by token through the decode path (else chunked prefill)
};

// Checks `ids` against the model before anything runs: not empty, every id inside the
// vocabulary, no longer than the model's capacity. `source` names where the ids came from.
void check_token_ids(const Lfm2Model& model, std::span<const uint32_t> ids, const std::string& source);

// Resets the model and runs `ids` from position 0; `on_rows` receives the logits in position
// order (f32 [rows][vocab], first_position = the position of the first row).
void compute_logits(Lfm2Model& model, std::span<const uint32_t> ids, const LogitsOptions& options,
                    const Lfm2Model::LogitRows& on_rows);

}  // namespace ember::llm
