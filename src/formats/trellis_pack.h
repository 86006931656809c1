// TRELLIS stage packs (seed 004, docs/formats.md "TRELLIS stage pack"): `manifest.json` plus
// shards `stage-NNN.bin`. Parsing, validation (every problem reported at once) and read access.
//
// Tensor encodings:
//   raw                  little-endian f16, row-major, `shape` as given;
//   symmetric-quantized  int8, one f16 scale per `group_size` columns, w = q * scale, in the
//                        tile-major layout of formats/int8_tiles.h (tile outer, group inner;
//                        data blocks 16x64 row-major, scales [tile][group][16]). rows = shape[0],
//                        columns = the product of the other dimensions.
// Every range (data, scales) starts 256-aligned, lies inside one shard, and no two overlap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/int8_tiles.h"

namespace ember::formats {

inline constexpr const char* kStagePackSchema = "trellis-webgpu-pack";
inline constexpr int kStagePackVersion = 1;
inline constexpr uint64_t kStagePackAlignment = 256;
inline constexpr const char* kStageManifestFile = "manifest.json";

struct ShardInfo {
  std::string file;
  uint64_t bytes = 0;
  std::string sha256;  // lowercase hex
};

struct StageTensorRef {
  uint32_t shard;
  uint64_t offset, bytes;
};

struct StageTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string encoding;  // "raw" | "symmetric-quantized"
  std::string dtype;     // raw: "f16"
  uint32_t bits = 0, group_size = 0, output_tile = 0;
  int64_t rows = 0, columns = 0, padded_rows = 0, padded_columns = 0;
  StageTensorRef data;
  std::optional<StageTensorRef> scales;

  bool quantized() const { return encoding == "symmetric-quantized"; }
  int64_t numel() const;
  Int8TileLayout layout() const;  // quantized tensors
};

struct StageManifest {
  std::string schema, stage, upstream_revision;
  int version = 0;
  std::vector<ShardInfo> shards;
  // Side files of the stage besides its tensors (textEncoder: tokenizer.json, config.json), each
  // sha256-checked like a shard; the key "files" is absent from packs without any (seed 004).
  std::vector<ShardInfo> files;
  std::map<std::string, StageTensor> tensors;
  nlohmann::json raw;  // the whole manifest as read (unknown keys kept)
  // The seed has no config fields: stage hyper-parameters follow from the tensor shapes
  // (formats/ss_flow_config.h: infer_ss_flow_config).
};

// One validation finding: file, tensor or field, byte offset (when one applies), the problem and
// what was expected against what was found.
struct PackProblem {
  std::string file;
  std::string field;  // "tensors.<name>.data", "shards[1].sha256", ...
  std::optional<uint64_t> offset;
  std::string problem;
  std::string expected, found;
  std::string to_string() const;
};

// Parses manifest text into the structure, collecting every field problem (missing or
// mistyped fields, unknown encoding). Malformed JSON throws ember::Error with line/column.
StageManifest parse_stage_manifest(const std::string& json_text, const std::string& file,
                                   std::vector<PackProblem>& problems);

// The structural checks that need no shard files: schema/version, shard indices, byte counts
// consistent with shape/encoding/padding, 256-alignment, ranges inside their shard's declared
// size, no straddling, no overlaps.
std::vector<PackProblem> validate_stage_manifest(const StageManifest& manifest, const std::string& file = kStageManifestFile);

// Manifest text -> manifest, throwing one ember::Error listing every problem.
StageManifest load_stage_manifest(const std::filesystem::path& manifest_path);

// The manifest as the packer writes it (key order and layout of seed 004).
std::string stage_manifest_json(const StageManifest& manifest);

// One Error whose message lists every problem (first line: how many).
[[noreturn]] void throw_pack_problems(const std::vector<PackProblem>& problems, const std::string& where);

// Every problem of the pack in `dir` (manifest fields and layout, missing/truncated shards,
// sha256 when asked) without throwing; `manifest` is set when manifest.json parsed as JSON.
struct StagePackCheck {
  std::optional<StageManifest> manifest;
  std::vector<PackProblem> problems;
};
StagePackCheck check_stage_pack(const std::filesystem::path& dir, bool verify_sha256 = true);

class StagePack {
 public:
  // Reads and validates `dir`/manifest.json and maps every shard (size checked; sha256 too
  // unless verify_sha256 is false). Throws one ember::Error listing every problem.
  static StagePack open(const std::filesystem::path& dir, bool verify_sha256 = true);

  const std::filesystem::path& dir() const { return dir_; }
  const StageManifest& manifest() const { return manifest_; }
  bool has(const std::string& name) const { return manifest_.tensors.count(name) > 0; }
  const StageTensor& tensor(const std::string& name) const;  // Error naming the tensor if missing
  std::span<const uint8_t> data(const StageTensor& t) const;
  std::span<const uint8_t> scales(const StageTensor& t) const;  // Error for raw tensors
  // Row-major [rows][columns] f32 with padding dropped for quantized tensors; raw f16 -> f32
  // in its shape.
  std::vector<float> dequantize(const std::string& name) const;
  // A side file's contents (listed in the manifest's "files", checked when the pack was opened);
  // ember::Error naming the pack when it lists no such file.
  std::string side_file(const std::string& name) const;

 private:
  friend StagePackCheck check_stage_pack(const std::filesystem::path&, bool);
  static StagePack load(const std::filesystem::path& dir, bool verify_sha256, std::vector<PackProblem>& problems);
  std::filesystem::path dir_;
  StageManifest manifest_;
  std::vector<std::shared_ptr<const uint8_t>> shards_;  // mapped shard files (munmap on release)
  std::map<std::string, std::string> side_files_;        // "files", as read and checked
};

}  // namespace ember::formats
