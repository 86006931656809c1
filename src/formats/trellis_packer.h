// The stage-pack writer: f32 tensors under upstream state-dict names -> manifest.json plus
// stage-NNN.bin shards, with the layout rules of docs/formats.md that reproduce seed 004:
//   - tensors in sorted name order; each tensor's data, then its scales, each range starting
//     256-aligned (the cursor is rounded up to 256 before every range);
//   - a tensor (data and scales together) never straddles shards: a new shard starts when the
//     tensor's span from the aligned cursor (round_up(data, 256) + scales) would end past
//     shard_limit (64 MiB); a tensor larger than the limit gets a shard of its own;
//   - a shard's size is its cursor after the last tensor rounded up to 256 (seed: 67094016,
//     67084800, 30948096 bytes);
//   - `*.weight` tensors of rank 2 or more and `pos_emb` are symmetric-quantized int8 (group 64,
//     tile 16), a rank-5 Conv3d weight [out, in, k, k, k] as the matrix [out][in * k^3];
//     everything else (biases, norm weights, q/k gammas) is raw f16.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/output_guard.h"
#include "formats/trellis_pack.h"

namespace ember::formats {

struct StagePackOptions {
  std::string stage = "sparseStructureFlow";
  std::string upstream_revision = "unknown";
  uint64_t shard_limit = 64ull << 20;
  uint32_t group_size = 64, output_tile = 16;
  // Called before each tensor is encoded: (index, count, name).
  std::function<void(size_t, size_t, const std::string&)> progress;
  // Side files written into the stage beside the shards and listed in the manifest's "files"
  // (name -> contents), e.g. the text encoder's tokenizer.json.
  std::map<std::string, std::string> side_files;
};

// Whether the packer quantizes a tensor of this name and shape.
bool stage_tensor_is_quantized(const std::string& name, const std::vector<int64_t>& shape);

// The manifest the packer would write for these shapes (sha256 left empty): the layout alone,
// cheap enough to check against the seed without any weights.
StageManifest plan_stage_pack(const std::map<std::string, std::vector<int64_t>>& shapes, const StagePackOptions& options);

struct TensorPackReport {
  std::string name;
  std::string encoding;
  double rel_l2 = 0;     // ||dequantized - source|| / ||source||
  double max_abs = 0;    // max |dequantized - source|
};

// A stage pack directory as an output: --force may replace a directory holding only a
// manifest.json and stage-NNN.bin shards.
OutputKind stage_pack_output();

// Writes the pack to `dir` atomically under output_guard.h's rules (checked before any tensor
// is loaded; a failed run leaves nothing). `load(name)` returns the tensor's f32 values in row-major order; it
// is called once per tensor, in sorted order, so a checkpoint can be read lazily.
std::vector<TensorPackReport> write_stage_pack(const OutputTarget& dir,
                                               const std::map<std::string, std::vector<int64_t>>& shapes,
                                               const std::function<std::vector<float>(const std::string&)>& load,
                                               const StagePackOptions& options);

}  // namespace ember::formats
