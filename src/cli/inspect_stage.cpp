// The stage half of `ember inspect`: what a TRELLIS stage pack holds and whether it is valid.
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/ss_decoder_config.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"

namespace ember::cli {
namespace {

std::string dims(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) out += (i ? "x" : "") + std::to_string(s[i]);
  return out.empty() ? "scalar" : out;
}

}  // namespace

bool inspect_stage_pack(const std::filesystem::path& dir, bool as_json) {
  formats::StagePackCheck check;
  try {
    check = formats::check_stage_pack(dir, true);
  } catch (const Error& e) {  // no manifest or malformed JSON: nothing more to show
    if (as_json) {
      std::printf("%s\n", nlohmann::json{{"kind", "trellis-stage-pack"}, {"valid", false}, {"problems", {e.what()}}}.dump(2).c_str());
    } else {
      std::printf("%s: INVALID\n  - %s\n", dir.c_str(), e.what());
    }
    return false;
  }
  const auto& m = *check.manifest;
  uint64_t q_data = 0, q_scales = 0, raw = 0, params = 0, quantized_params = 0;
  for (const auto& [n, t] : m.tensors) {
    params += static_cast<uint64_t>(t.numel());
    if (t.quantized()) {
      q_data += t.data.bytes;
      q_scales += t.scales ? t.scales->bytes : 0;
      quantized_params += static_cast<uint64_t>(t.numel());
    } else {
      raw += t.data.bytes;
    }
  }
  uint64_t shard_total = 0;
  for (const auto& s : m.shards) shard_total += s.bytes;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [n, t] : m.tensors) shapes[n] = t.shape;
  nlohmann::json config;
  std::string config_note;
  try {
    config = m.stage == "sparseStructureDecoder" ? formats::infer_ss_decoder_config(shapes, dir.string()).to_json()
                                                 : formats::infer_ss_flow_config(shapes, dir.string()).to_json();
  } catch (const Error& e) {
    config_note = e.what();
  }
  if (as_json) {
    nlohmann::json j;
    j["kind"] = "trellis-stage-pack";
    j["dir"] = dir.string();
    j["schema"] = m.schema;
    j["version"] = m.version;
    j["stage"] = m.stage;
    j["upstreamRevision"] = m.upstream_revision;
    j["shards"] = nlohmann::json::array();
    for (const auto& s : m.shards) j["shards"].push_back({{"file", s.file}, {"bytes", s.bytes}, {"sha256", s.sha256}});
    j["tensors"] = nlohmann::json::array();
    for (const auto& [n, t] : m.tensors) {
      nlohmann::json tj{{"name", n}, {"shape", t.shape}, {"encoding", t.encoding}, {"shard", t.data.shard},
                        {"offset", t.data.offset}, {"bytes", t.data.bytes}};
      if (t.quantized()) {
        tj["bits"] = t.bits;
        tj["group_size"] = t.group_size;
        tj["output_tile"] = t.output_tile;
        tj["padded"] = {t.padded_rows, t.padded_columns};
        if (t.scales) tj["scale_bytes"] = t.scales->bytes;
      } else {
        tj["dtype"] = t.dtype;
      }
      j["tensors"].push_back(tj);
    }
    j["bytes"] = {{"int8_data", q_data}, {"f16_scales", q_scales}, {"raw_f16", raw},
                  {"alignment_padding", shard_total - q_data - q_scales - raw}, {"total", shard_total}};
    j["parameters"] = {{"total", params}, {"int8", quantized_params}};
    j["config"] = config.is_null() ? nlohmann::json(config_note) : config;
    j["valid"] = check.problems.empty();
    j["problems"] = nlohmann::json::array();
    for (const auto& p : check.problems) j["problems"].push_back(p.to_string());
    std::printf("%s\n", j.dump(2).c_str());
    return check.problems.empty();
  }
  std::printf("TRELLIS stage pack %s\n", dir.c_str());
  std::printf("  schema %s v%d, stage %s, upstream revision %s\n", m.schema.c_str(), m.version, m.stage.c_str(),
              m.upstream_revision.c_str());
  if (!config.is_null()) {
    const auto& c = config["args"];
    std::printf("  model: SparseStructureFlowModel, %lld channels, %lld blocks, %lld heads, resolution %lld, in/out %lld/%lld, cond %lld\n",
                c["model_channels"].get<long long>(), c["num_blocks"].get<long long>(), c["num_heads"].get<long long>(),
                c["resolution"].get<long long>(), c["in_channels"].get<long long>(), c["out_channels"].get<long long>(),
                c["cond_channels"].get<long long>());
  }
  std::printf("  %zu shards, %.2f MiB:\n", m.shards.size(), shard_total / 1048576.0);
  for (const auto& s : m.shards) std::printf("    %-16s %12llu bytes  sha256 %s\n", s.file.c_str(), static_cast<unsigned long long>(s.bytes), s.sha256.c_str());
  std::printf("  %zu tensors, %llu parameters (%llu int8):\n", m.tensors.size(), static_cast<unsigned long long>(params),
              static_cast<unsigned long long>(quantized_params));
  std::printf("    %-40s %-12s %-20s %-5s %10s %10s\n", "name", "shape", "encoding", "shard", "offset", "bytes");
  for (const auto& [n, t] : m.tensors) {
    std::string enc = t.quantized() ? "int8 g" + std::to_string(t.group_size) + " t" + std::to_string(t.output_tile) : t.encoding + " " + t.dtype;
    uint64_t bytes = t.data.bytes + (t.scales ? t.scales->bytes : 0);
    std::printf("    %-40s %-12s %-20s %5u %10llu %10llu\n", n.c_str(), dims(t.shape).c_str(), enc.c_str(), t.data.shard,
                static_cast<unsigned long long>(t.data.offset), static_cast<unsigned long long>(bytes));
  }
  std::printf("  bytes: int8 data %llu, f16 scales %llu, raw f16 %llu, alignment padding %llu\n",
              static_cast<unsigned long long>(q_data), static_cast<unsigned long long>(q_scales),
              static_cast<unsigned long long>(raw), static_cast<unsigned long long>(shard_total - q_data - q_scales - raw));
  if (check.problems.empty()) {
    std::printf("  verdict: valid (layout checked, every shard's size and sha256 verified)\n");
  } else {
    std::printf("  verdict: INVALID, %zu problems:\n", check.problems.size());
    for (const auto& p : check.problems) std::printf("    - %s\n", p.to_string().c_str());
  }
  return check.problems.empty();
}

}  // namespace ember::cli
