#include "kernels/qmatmul.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t tokens, rows, cols, padded_rows;
  uint32_t padded_cols, x_stride, y_stride, tokens_per_batch;
  uint32_t gate_stride, gate_offset, add_period, k_chunk;
};
static_assert(sizeof(Params) == 48);

// Columns per split: whole 64-column groups, so a chunk never cuts a quantization group.
uint32_t split_chunk(const QuantizedMatrix& w, uint32_t k_splits) {
  const uint32_t groups = w.padded_cols / 64;
  return 64 * ((groups + k_splits - 1) / k_splits);
}

// Whether a thread's share of one K step fits the prefetch registers (qmatmul.wgsl: XPER, WPER).
bool prefetch_fits(const QMatmulGeometry& g) {
  const uint32_t threads = g.wg_tokens * g.wg_rows;
  const uint32_t x_floats = (8 * g.wg_tokens * g.k_step + threads - 1) / threads;
  const uint32_t w_words = (g.rows_per_thread * g.wg_rows * (g.k_step / 4) + threads - 1) / threads;
  return x_floats <= 16 && w_words <= 8;
}

void add_epilogue_define(gpu::KernelKey& key, Epilogue e) {
  switch (e) {
    case Epilogue::None: break;
    case Epilogue::Gelu: key.defines.insert("GELU"); break;
    case Epilogue::GatedResidual: key.defines.insert("GATE"); break;
    case Epilogue::Residual: key.defines.insert("RESIDUAL"); break;
    case Epilogue::AddRows: key.defines.insert("ADD_ROWS"); break;
  }
}

}  // namespace

uint64_t qmatmul_split_floats(const QuantizedMatrix& w, uint32_t tokens, uint32_t k_splits) {
  if (k_splits <= 1) return 0;
  const uint32_t chunk = split_chunk(w, k_splits);
  return uint64_t((w.padded_cols + chunk - 1) / chunk) * tokens * w.rows;
}

std::vector<Dispatch> qmatmul_dispatches(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  const auto& g = a.geometry;
  if (g.wg_rows % 2 || 64 % g.k_step || g.k_step % 4 || g.k_splits == 0 || (g.rows_per_thread != 8 && g.rows_per_thread != 16))
    throw Error("bad qmatmul geometry: wg_rows must be even, k_step a multiple of 4 dividing 64, k_splits at least 1, rows_per_thread 8 or 16",
                "qmatmul " + region);
  const QuantizedMatrix& w = *a.w;
  if (w.padded_rows % 16 || w.padded_cols % 64 || w.rows > w.padded_rows || w.cols > w.padded_cols)
    throw Error("quantized matrix padding is not 16 rows x 64 columns", "qmatmul " + region);
  const bool split = g.k_splits > 1;
  const uint32_t chunk = split ? split_chunk(w, g.k_splits) : w.padded_cols;
  const uint32_t splits = (w.padded_cols + chunk - 1) / chunk;
  if (split && (!a.split_partials || a.split_partials->size() < 4 * qmatmul_split_floats(w, a.tokens, g.k_splits)))
    throw Error("split-K qmatmul needs a scratch of " + std::to_string(qmatmul_split_floats(w, a.tokens, g.k_splits)) + " floats",
                "qmatmul " + region, "pass split_partials of qmatmul_split_floats(...) floats");
  gpu::KernelKey key{.file = "qmatmul.wgsl",
                     .constants = {{"WG_T", g.wg_tokens}, {"WG_R", g.wg_rows}, {"KS", g.k_step}}};
  if (g.vec4) key.defines.insert("VEC4");
  if (g.rows_per_thread == 16) key.defines.insert("ROWS16");
  if (g.prefetch && prefetch_fits(g)) key.defines.insert("PREFETCH");
  if (split)
    key.defines.insert("SPLIT_K");
  else
    add_epilogue_define(key, a.epilogue);
  const bool needs_extra = a.epilogue == Epilogue::GatedResidual || a.epilogue == Epilogue::AddRows;
  if (needs_extra && !a.extra) throw Error("qmatmul epilogue needs its extra buffer", "qmatmul " + region);
  const Params p{a.tokens, w.rows, w.cols, w.padded_rows, w.padded_cols, a.x_stride, a.y_stride,
                 a.tokens_per_batch, a.gate_stride, a.gate_offset, a.add_period, chunk};
  std::vector<Dispatch> out(split ? 2 : 1);
  Dispatch& d = out[0];
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(p, "qmatmul params " + region);
  std::vector<gpu::Binding> b{{a.x}, {&w.data}, {&w.scales}, {&w.bias}, {split ? a.split_partials : a.y}, {&d.params}};
  if (needs_extra && !split) b.push_back({a.extra});
  d.group = kernels.bind(*d.kernel, b);
  d.x = (w.rows + g.rows_per_thread * g.wg_rows - 1) / (g.rows_per_thread * g.wg_rows);
  d.y = (a.tokens + 8 * g.wg_tokens - 1) / (8 * g.wg_tokens);
  d.z = splits;
  if (split) {
    Dispatch& s = out[1];
    gpu::KernelKey sum_key{.file = "qmatmul_split_sum.wgsl", .constants = {{"WG", 256}}};
    add_epilogue_define(sum_key, a.epilogue);
    s.kernel = &kernels.get(sum_key);
    s.region = region + ".sum";
    s.params = kernels.device().create_uniform(p, "qmatmul split sum params " + region);
    std::vector<gpu::Binding> sb{{a.split_partials}, {a.y}, {&s.params}};
    if (needs_extra) sb.push_back({a.extra});
    s.group = kernels.bind(*s.kernel, sb);
    grid_1d(s, (uint64_t(a.tokens) * w.rows + 255) / 256);
  }
  return out;
}

Dispatch qmatmul(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  if (a.geometry.k_splits != 1)
    throw Error("qmatmul with k_splits > 1 is two dispatches", "qmatmul " + region, "call qmatmul_dispatches");
  return std::move(qmatmul_dispatches(kernels, a, region)[0]);
}

}  // namespace ember::kernels
