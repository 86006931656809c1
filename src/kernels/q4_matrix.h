// What every 4-bit matrix kernel family shares: how a packed matrix is bound, the result of
// binding (bind group + its uniform + grid), and the checks on shapes and buffer ranges.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

// A 4-bit matrix [rows][cols] in the pack format (docs/formats.md "LLM runtime pack"): each part
// bound as its own range (one buffer per section, or a shared buffer with 256-aligned offsets).
// zero_points.buffer == nullptr means symmetric ((q - 8) * scale).
struct Q4Matrix {
  gpu::Binding quant{};
  gpu::Binding scales{};
  gpu::Binding zero_points{};
  uint32_t rows = 0, cols = 0;
  bool asymmetric() const { return zero_points.buffer != nullptr; }
};

// The candidate's 4-bit matvec strategies: scalar loads of whole blocks, 16-byte vector loads, and
// ember's two: eight lanes per block reading the input in coalesced 16-byte pieces (split_block),
// and all of a lane's weight blocks loaded up front while x is staged in workgroup memory
// (shared_x).
enum class Q4Variant { carried, v3_both, split_block, shared_x };
// The candidate's names ("carried", "v3_both", "split_block", "shared_x"); anything else is an
// ember::Error.
Q4Variant parse_q4_variant(const std::string& name);
const char* q4_variant_name(Q4Variant v);

enum class OutputMode { overwrite, accumulate };  // y = W x, or y += W x (residual add)
// subgroup: subgroupAdd (needs the feature); shared: workgroup memory only; best: subgroup
// where the device has it.
enum class Reduction { best, subgroup, shared };

// A bind group with everything it needs: the uniform it reads and the dispatch grid.
struct Bound {
  gpu::BindGroup group;
  gpu::Buffer params;
  uint32_t groups_x = 1, groups_y = 1;
};

// Workgroup grid for `groups` workgroups with at most `max_per_dim` per dimension: (x, 1), or a
// 2D grid whose x * y >= groups (the kernel skips the excess by its linear index).
struct Grid {
  uint32_t x = 1, y = 1;
};
Grid split_grid(uint64_t groups, uint32_t max_per_dim, const std::string& where);

// Bytes a binding covers (its size, or the rest of its buffer).
uint64_t binding_bytes(const gpu::Binding& b);
// Throws an ember::Error naming `what` and `where` unless the binding covers `bytes`.
void require_binding(const gpu::Binding& b, uint64_t bytes, const std::string& what, const std::string& where);
// Checks a matrix's shape against the kernel's and its parts' ranges against the packed sizes.
void check_q4_matrix(const Q4Matrix& m, uint32_t rows, uint32_t cols, bool asymmetric, const std::string& where);

// Resolves Reduction::best and rejects subgroup on devices without the feature.
bool use_subgroups(const gpu::Device& device, Reduction r, const std::string& where);

}  // namespace ember::kernels
