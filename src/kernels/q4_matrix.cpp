#include "kernels/q4_matrix.h"

#include "common/error.h"

namespace ember::kernels {

Q4Variant parse_q4_variant(const std::string& name) {
  if (name == "carried") return Q4Variant::carried;
  if (name == "v3_both") return Q4Variant::v3_both;
  if (name == "split_block") return Q4Variant::split_block;
  if (name == "shared_x") return Q4Variant::shared_x;
  throw Error("unknown 4-bit matvec variant \"" + name + "\"", "candidate",
              "use \"carried\", \"v3_both\", \"split_block\" or \"shared_x\"");
}

const char* q4_variant_name(Q4Variant v) {
  switch (v) {
    case Q4Variant::carried: return "carried";
    case Q4Variant::v3_both: return "v3_both";
    case Q4Variant::split_block: return "split_block";
    case Q4Variant::shared_x: return "shared_x";
  }
  return "carried";
}

Grid split_grid(uint64_t groups, uint32_t max_per_dim, const std::string& where) {
  if (groups == 0) return {1, 1};
  if (groups <= max_per_dim) return {static_cast<uint32_t>(groups), 1};
  uint64_t y = (groups + max_per_dim - 1) / max_per_dim;
  if (y > max_per_dim)
    throw Error(std::to_string(groups) + " workgroups do not fit a 2D grid of " + std::to_string(max_per_dim) + " per dimension",
                where, "use a geometry with more rows per workgroup");
  uint64_t x = (groups + y - 1) / y;
  return {static_cast<uint32_t>(x), static_cast<uint32_t>(y)};
}

uint64_t binding_bytes(const gpu::Binding& b) {
  if (!b.buffer) return 0;
  if (b.size != WGPU_WHOLE_SIZE) return b.size;
  return b.offset < b.buffer->size() ? b.buffer->size() - b.offset : 0;
}

void require_binding(const gpu::Binding& b, uint64_t bytes, const std::string& what, const std::string& where) {
  if (!b.buffer || !*b.buffer) throw Error(what + " has no buffer", where);
  uint64_t have = binding_bytes(b);
  if (have < bytes)
    throw Error(what + " covers " + std::to_string(have) + " bytes but needs " + std::to_string(bytes), where + " (" + b.buffer->label() + ")",
                "bind the whole tensor");
}

void check_q4_matrix(const Q4Matrix& m, uint32_t rows, uint32_t cols, bool asymmetric, const std::string& where) {
  if (m.rows != rows || m.cols != cols)
    throw Error("matrix is " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + " but the kernel was built for " +
                    std::to_string(rows) + "x" + std::to_string(cols),
                where, "build the kernel for this matrix's shape");
  if (m.asymmetric() != asymmetric)
    throw Error(asymmetric ? "kernel expects zero points but the matrix has none" : "matrix has zero points but the kernel is symmetric",
                where, "set the kernel's asymmetric flag to match the matrix");
  uint64_t elems = uint64_t(rows) * cols;
  uint64_t blocks = elems / 32;
  require_binding(m.quant, elems / 2, "quant", where);
  require_binding(m.scales, blocks * 4, "scales", where);
  if (asymmetric) require_binding(m.zero_points, (blocks + 7) / 8 * 4, "zero_points", where);
}

bool use_subgroups(const gpu::Device& device, Reduction r, const std::string& where) {
  if (r == Reduction::shared) return false;
  if (r == Reduction::best) return device.has_subgroups();
  if (!device.has_subgroups())
    throw Error("the subgroup reduction needs the subgroups feature, which this device lacks", where,
                "use the shared-memory reduction");
  return true;
}

}  // namespace ember::kernels
