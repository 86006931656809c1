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


Params params_of(const QMatmulArgs& a, uint32_t chunk) {
  const QuantizedMatrix& w = *a.w;
  return {a.tokens, w.rows, w.cols, w.padded_rows, w.padded_cols, a.x_stride, a.y_stride,
          a.tokens_per_batch, a.gate_stride, a.gate_offset, a.add_period, chunk};
}

bool needs_extra(Epilogue e) { return e == Epilogue::GatedResidual || e == Epilogue::AddRows; }

// The split-K sum pass: the partials in a.split_partials summed into a.y with the epilogue.
Dispatch split_sum(gpu::KernelCache& kernels, const QMatmulArgs& a, const Params& p, const std::string& region) {
  Dispatch s;
  gpu::KernelKey sum_key{.file = "qmatmul_split_sum.wgsl", .constants = {{"WG", 256}}};
  add_epilogue_define(sum_key, a.epilogue);
  s.kernel = &kernels.get(sum_key);
  s.region = region + ".sum";
  s.params = kernels.device().create_uniform(p, "qmatmul split sum params " + region);
  std::vector<gpu::Binding> sb{{a.split_partials}, {a.y}, {&s.params}};
  if (needs_extra(a.epilogue)) sb.push_back({a.extra});
  s.group = kernels.bind(*s.kernel, sb);
  grid_1d(s, (uint64_t(a.tokens) * a.w->rows + 255) / 256);
  return s;
}

void check_matrix(const QuantizedMatrix& w, const std::string& region) {
  if (w.padded_rows % 16 || w.padded_cols % 64 || w.rows > w.padded_rows || w.cols > w.padded_cols)
    throw Error("quantized matrix padding is not 16 rows x 64 columns", "qmatmul " + region);
}

void check_split_scratch(const QMatmulArgs& a, const std::string& region) {
  const uint64_t floats = qmatmul_split_floats(*a.w, a.tokens, a.geometry.k_splits);
  if (a.geometry.k_splits > 1 && (!a.split_partials || a.split_partials->size() < 4 * floats))
    throw Error("split-K qmatmul needs a scratch of " + std::to_string(floats) + " floats", "qmatmul " + region,
                "pass split_partials of qmatmul_split_floats(...) floats");
}

// The int8 path: quantize X, the packed-dot product (its partials with split-K), the sum pass.
std::vector<Dispatch> qmatmul_i8_dispatches(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  const auto& g = a.geometry;
  if (g.wg_rows % 2 || g.wg_tokens == 0 || g.k_splits == 0 || (g.rows_per_thread != 8 && g.rows_per_thread != 16))
    throw Error("bad int8 qmatmul geometry: wg_rows must be even, wg_tokens and k_splits at least 1, rows_per_thread 8 or 16",
                "qmatmul " + region);
  if (!kernels.device().adapter().dot4_i8_packed)
    throw Error("this adapter lacks the WGSL language feature packed_4x8_integer_dot_product", "int8 qmatmul " + region,
                "use the f32 path (geometry.int8 = false)");
  const QuantizedMatrix& w = *a.w;
  check_matrix(w, region);
  check_split_scratch(a, region);
  if (!a.x_quant || a.x_quant->size() < qmatmul_quant_bytes(w, a.tokens))
    throw Error("int8 qmatmul needs a scratch of " + std::to_string(qmatmul_quant_bytes(w, a.tokens)) + " bytes", "qmatmul " + region,
                "pass x_quant of qmatmul_quant_bytes(...) bytes");
  const bool split = g.k_splits > 1;
  const uint32_t chunk = split ? split_chunk(w, g.k_splits) : w.padded_cols;
  const Params p = params_of(a, chunk);
  std::vector<Dispatch> out(split ? 3 : 2);
  Dispatch& q = out[0];
  q.kernel = &kernels.get(gpu::KernelKey{.file = "qmatmul_quantize.wgsl"});
  q.region = region + ".quant";
  q.params = kernels.device().create_uniform(p, "qmatmul quantize params " + region);
  q.group = kernels.bind(*q.kernel, {{a.x}, {a.x_quant}, {&q.params}});
  grid_1d(q, (uint64_t(a.tokens) * (w.padded_cols / 64) + 15) / 16);
  gpu::KernelKey key{.file = "qmatmul_i8.wgsl", .constants = {{"WG_T", g.wg_tokens}, {"WG_R", g.wg_rows}}};
  if (g.rows_per_thread == 16) key.defines.insert("ROWS16");
  if (split)
    key.defines.insert("SPLIT_K");
  else
    add_epilogue_define(key, a.epilogue);
  if (needs_extra(a.epilogue) && !a.extra) throw Error("qmatmul epilogue needs its extra buffer", "qmatmul " + region);
  Dispatch& d = out[1];
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(p, "qmatmul params " + region);
  std::vector<gpu::Binding> b{{a.x_quant}, {&w.data}, {&w.scales}, {&w.bias}, {split ? a.split_partials : a.y}, {&d.params}};
  if (needs_extra(a.epilogue) && !split) b.push_back({a.extra});
  d.group = kernels.bind(*d.kernel, b);
  d.x = (w.rows + g.rows_per_thread * g.wg_rows - 1) / (g.rows_per_thread * g.wg_rows);
  d.y = (a.tokens + 8 * g.wg_tokens - 1) / (8 * g.wg_tokens);
  d.z = (w.padded_cols + chunk - 1) / chunk;
  if (split) out[2] = split_sum(kernels, a, p, region);
  return out;
}

}  // namespace

uint64_t qmatmul_split_floats(const QuantizedMatrix& w, uint32_t tokens, uint32_t k_splits) {
  if (k_splits <= 1) return 0;
  const uint32_t chunk = split_chunk(w, k_splits);
  return uint64_t((w.padded_cols + chunk - 1) / chunk) * tokens * w.rows;
}

uint64_t qmatmul_quant_bytes(const QuantizedMatrix& w, uint32_t tokens) {
  return uint64_t(tokens) * (w.padded_cols + 4 * (w.padded_cols / 64));
}

std::vector<Dispatch> qmatmul_dispatches(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  const auto& g = a.geometry;
  if (g.int8) return qmatmul_i8_dispatches(kernels, a, region);
  if (g.wg_rows % 2 || 64 % g.k_step || g.k_step % 4 || g.k_splits == 0 || (g.rows_per_thread != 8 && g.rows_per_thread != 16))
    throw Error("bad qmatmul geometry: wg_rows must be even, k_step a multiple of 4 dividing 64, k_splits at least 1, rows_per_thread 8 or 16",
                "qmatmul " + region);
  const QuantizedMatrix& w = *a.w;
  check_matrix(w, region);
  const bool split = g.k_splits > 1;
  const uint32_t chunk = split ? split_chunk(w, g.k_splits) : w.padded_cols;
  const uint32_t splits = (w.padded_cols + chunk - 1) / chunk;
  check_split_scratch(a, region);
  gpu::KernelKey key{.file = "qmatmul.wgsl",
                     .constants = {{"WG_T", g.wg_tokens}, {"WG_R", g.wg_rows}, {"KS", g.k_step}}};
  if (g.vec4) key.defines.insert("VEC4");
  if (g.rows_per_thread == 16) key.defines.insert("ROWS16");
  if (g.prefetch && prefetch_fits(g)) key.defines.insert("PREFETCH");
  if (split)
    key.defines.insert("SPLIT_K");
  else
    add_epilogue_define(key, a.epilogue);
  if (needs_extra(a.epilogue) && !a.extra) throw Error("qmatmul epilogue needs its extra buffer", "qmatmul " + region);
  const Params p = params_of(a, chunk);
  std::vector<Dispatch> out(split ? 2 : 1);
  Dispatch& d = out[0];
  d.kernel = &kernels.get(key);
  d.region = region;
  d.params = kernels.device().create_uniform(p, "qmatmul params " + region);
  std::vector<gpu::Binding> b{{a.x}, {&w.data}, {&w.scales}, {&w.bias}, {split ? a.split_partials : a.y}, {&d.params}};
  if (needs_extra(a.epilogue) && !split) b.push_back({a.extra});
  d.group = kernels.bind(*d.kernel, b);
  d.x = (w.rows + g.rows_per_thread * g.wg_rows - 1) / (g.rows_per_thread * g.wg_rows);
  d.y = (a.tokens + 8 * g.wg_tokens - 1) / (8 * g.wg_tokens);
  d.z = splits;
  if (split) out[1] = split_sum(kernels, a, p, region);
  return out;
}

Dispatch qmatmul(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  if (a.geometry.int8) throw Error("the int8 qmatmul is several dispatches", "qmatmul " + region, "call qmatmul_dispatches");
  if (a.geometry.k_splits != 1)
    throw Error("qmatmul with k_splits > 1 is two dispatches", "qmatmul " + region, "call qmatmul_dispatches");
  return std::move(qmatmul_dispatches(kernels, a, region)[0]);
}

}  // namespace ember::kernels
