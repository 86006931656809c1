#include "llm/logits.h"

#include <cstring>
#include <vector>

#include "common/error.h"
#include "gpu/readback_ring.h"

namespace ember::llm {

void check_token_ids(const Lfm2Model& model, std::span<const uint32_t> ids, const std::string& source) {
  if (ids.empty()) throw Error("no token ids", source, "give at least one id");
  for (size_t i = 0; i < ids.size(); i++)
    if (ids[i] >= model.vocab())
      throw Error("token id " + std::to_string(ids[i]) + " at index " + std::to_string(i) + " is outside the vocabulary [0, " +
                      std::to_string(model.vocab()) + ")",
                  source, "use ids of this model's tokenizer");
  if (ids.size() > model.capacity())
    throw Error(std::to_string(ids.size()) + " tokens do not fit the model's context of " + std::to_string(model.capacity()) +
                    " positions (maxTotalPositions)",
                source, "give fewer tokens");
}

void compute_logits(Lfm2Model& model, std::span<const uint32_t> ids, const LogitsOptions& options,
                    const Lfm2Model::LogitRows& on_rows) {
  check_token_ids(model, ids, "compute_logits");
  model.reset();
  if (!options.decode) {
    if (options.all_positions) {
      model.prefill_logits(ids, on_rows);
    } else {
      model.prefill(ids);
      on_rows(static_cast<uint32_t>(ids.size() - 1), model.device().download_as<float>(model.logits()));
    }
    return;
  }
  // Decode path: each step embeds the id at tokens()[position()], as generation does. A step's
  // logits come back through a read-back ring, which checks the step's status words with them.
  const auto& device = model.device();
  device.upload(model.tokens(), ids);
  const uint64_t row_bytes = uint64_t(model.vocab()) * 4;
  gpu::ReadbackRing readback(device, row_bytes, 1, "logits.readback");
  for (size_t i = 0; i < ids.size(); i++) {
    gpu::Recorder rec(device);
    model.record_decode(rec);
    if (!options.all_positions && i + 1 < ids.size()) {
      rec.submit();  // its status words are owed to the device, whose check in the last read takes them
      continue;
    }
    rec.copy(model.logits(), 0, readback.buffer(0), 0, row_bytes);
    readback.submit(rec, 0);
    const auto bytes = readback.read(0, "logits --decode, position " + std::to_string(i));
    std::vector<float> row(model.vocab());
    std::memcpy(row.data(), bytes.data(), row_bytes);
    readback.release(0);
    on_rows(static_cast<uint32_t>(i), row);
  }
}

}  // namespace ember::llm
