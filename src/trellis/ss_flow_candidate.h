// The ss-flow stage candidate: the stage's tuning choices (SsFlowOptions) per device, in a JSON
// file beside the stage's manifest (docs/formats.md, "ss-flow stage candidates"). `ember tune
// --stage` writes an entry for the GPU it ran on; `ember ss-flow` and `ember bench ss-flow` read
// the entry of theirs and fall back to the defaults (SsFlowOptions{}) for a device without one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/adapter.h"
#include "trellis/ss_flow.h"

namespace ember::trellis {

inline constexpr const char* kSsFlowCandidateFile = "ss_flow_candidates.json";
inline constexpr const char* kSsFlowCandidateFormat = "ember-ss-flow-candidates";

// What identifies a device across runs: PCI vendor and device id and the backend ("10de:2335 Vulkan").
std::string candidate_device_key(const gpu::AdapterDescription& adapter);

// Options <-> JSON. Every field is optional when read (absent = the default); an unknown key, a
// value of the wrong type or out of range throws ember::Error naming `where` and the field.
nlohmann::json options_to_json(const SsFlowOptions& o);
SsFlowOptions options_from_json(const nlohmann::json& j, const std::string& where);

// One device's entry: the options and what the tuner found (kept as written).
struct SsFlowCandidate {
  SsFlowOptions options;
  nlohmann::json tuned = nlohmann::json::object();
};

// The entry of `adapter` in DIR/ss_flow_candidates.json, if the file has one. A file that is not
// valid throws ember::Error naming it (a broken candidate is never silently ignored).
std::optional<SsFlowCandidate> load_ss_flow_candidate(const std::filesystem::path& stage_dir, const gpu::AdapterDescription& adapter);
// Reads a candidate file given by path: the entry of `adapter`, else none.
std::optional<SsFlowCandidate> load_ss_flow_candidate_file(const std::filesystem::path& file, const gpu::AdapterDescription& adapter);

// Writes (atomically) the entry of `adapter` into `file`, keeping the other devices' entries of an
// existing candidate file; an existing file of another format is an error, never overwritten.
void save_ss_flow_candidate(const std::filesystem::path& file, const gpu::AdapterDescription& adapter, const SsFlowCandidate& c);

// The options a command runs: the stage's candidate for this device, else the defaults. `source`
// says which ("candidate FILE" or "defaults").
SsFlowOptions stage_options(const std::filesystem::path& stage_dir, const gpu::AdapterDescription& adapter, std::string* source = nullptr);

}  // namespace ember::trellis
