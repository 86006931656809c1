#include "llm/lfm2_layer_weights.h"

namespace ember::llm {

Lfm2LayerWeights lfm2_layer_weights(const Lfm2Weights& weights, const formats::LlmShape& shape, const Lfm2Graph& graph, int layer,
                                    bool kmajor_down) {
  const auto shapes = lfm2_matrix_shapes(shape);
  Lfm2LayerWeights w{.type = shape.layer_types[size_t(layer)]};
  for (size_t k = graph.layer_begin[size_t(layer)]; k < graph.layer_begin[size_t(layer) + 1]; k++) {
    const Lfm2Op& op = graph.ops[k];
    if (!op.shape_key) continue;
    const Lfm2MatrixShape& m = lfm2_matrix_shape(shapes, op.shape_key);
    switch (op.role) {
      case Lfm2Role::mix_in:
        w.mix_in = weights.matrix(op.weight, m.rows, m.cols);
        w.mix_in_key = m.key;
        break;
      case Lfm2Role::mix_out:
        w.mix_out = weights.matrix(op.weight, m.rows, m.cols);
        w.mix_out_key = m.key;
        break;
      case Lfm2Role::gate_up: w.gate_up = weights.matrix(op.weight, m.rows, m.cols); break;
      default: w.down = kmajor_down ? weights.matrix(op.weight, m.cols, m.rows, /*kmajor=*/true) : weights.matrix(op.weight, m.rows, m.cols);
    }
  }
  return w;
}

}  // namespace ember::llm
