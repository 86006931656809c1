#include "kernels/qmatmul.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t tokens, rows, cols, padded_rows;
  uint32_t padded_cols, x_stride, y_stride, tokens_per_batch;
  uint32_t gate_stride, gate_offset, add_period, pad;
};
static_assert(sizeof(Params) == 48);

}  // namespace

Dispatch qmatmul(gpu::KernelCache& kernels, const QMatmulArgs& a, const std::string& region) {
  const auto& g = a.geometry;
  if (g.wg_rows % 2 || 64 % g.k_step || g.k_step % 4)
    throw Error("bad qmatmul geometry: wg_rows must be even, k_step a multiple of 4 dividing 64", "qmatmul " + region);
  const QuantizedMatrix& w = *a.w;
  if (w.padded_rows % 16 || w.padded_cols % 64 || w.rows > w.padded_rows || w.cols > w.padded_cols)
    throw Error("quantized matrix padding is not 16 rows x 64 columns", "qmatmul " + region);
  gpu::KernelKey key{.file = "qmatmul.wgsl",
                     .constants = {{"WG_T", g.wg_tokens}, {"WG_R", g.wg_rows}, {"KS", g.k_step}}};
  if (g.vec4) key.defines.insert("VEC4");
  switch (a.epilogue) {
    case Epilogue::None: break;
    case Epilogue::Gelu: key.defines.insert("GELU"); break;
    case Epilogue::GatedResidual: key.defines.insert("GATE"); break;
    case Epilogue::Residual: key.defines.insert("RESIDUAL"); break;
    case Epilogue::AddRows: key.defines.insert("ADD_ROWS"); break;
  }
  const bool needs_extra = a.epilogue == Epilogue::GatedResidual || a.epilogue == Epilogue::AddRows;
  if (needs_extra && !a.extra) throw Error("qmatmul epilogue needs its extra buffer", "qmatmul " + region);
  Dispatch d;
  d.kernel = &kernels.get(key);
  d.region = region;
  Params p{a.tokens, w.rows, w.cols, w.padded_rows, w.padded_cols, a.x_stride, a.y_stride,
           a.tokens_per_batch, a.gate_stride, a.gate_offset, a.add_period, 0};
  d.params = kernels.device().create_uniform(p, "qmatmul params " + region);
  std::vector<gpu::Binding> b{{a.x}, {&w.data}, {&w.scales}, {&w.bias}, {a.y}, {&d.params}};
  if (needs_extra) b.push_back({a.extra});
  d.group = kernels.bind(*d.kernel, b);
  d.x = (w.rows + 8 * g.wg_rows - 1) / (8 * g.wg_rows);
  d.y = (a.tokens + 8 * g.wg_tokens - 1) / (8 * g.wg_tokens);
  return d;
}

}  // namespace ember::kernels
