// The int8 path of qmatmul (X quantized per token and 64-column group, packed int8 dot products
// against the pack's int8 weights) against a CPU reference of the same arithmetic, at awkward sizes,
// every epilogue, split-K, outputs and scratch poisoned first; and how far it is from the f32 path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"
#include "kernel_test_util.h"
#include "kernels/qmatmul.h"
#include "reference/ss_flow_reference.h"
#include "trellis/stage_upload.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

gpu::Buffer upload(const std::vector<float>& v, const std::string& label = "in") { return test::buffer_from(v, label); }

bool has_dot4() { return test_device().adapter().dot4_i8_packed; }

// X as the int8 path sees it: each token's 64-column groups quantized to round(x / s) s with
// s = max|x| / 127 over the group.
std::vector<float> quantized_activations(const std::vector<float>& x, uint32_t tokens, uint32_t cols) {
  std::vector<float> out(x.size());
  for (uint32_t t = 0; t < tokens; t++)
    for (uint32_t c0 = 0; c0 < cols; c0 += 64) {
      const uint32_t c1 = std::min(cols, c0 + 64);
      float amax = 0;
      for (uint32_t c = c0; c < c1; c++) amax = std::max(amax, std::fabs(x[t * cols + c]));
      const float s = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
      for (uint32_t c = c0; c < c1; c++) out[t * cols + c] = std::clamp(std::nearbyint(x[t * cols + c] * inv), -127.0f, 127.0f) * s;
    }
  return out;
}

struct Case {
  uint32_t tokens, rows, cols;
};

class QMatmulInt8 : public ::testing::TestWithParam<std::tuple<kernels::QMatmulGeometry, kernels::Epilogue>> {};

TEST_P(QMatmulInt8, MatchesReferenceOfTheSameArithmetic) {
  if (!has_dot4()) GTEST_SKIP() << "no packed_4x8_integer_dot_product";
  auto [geometry, epilogue] = GetParam();
  uint32_t seed = 40;
  for (auto c : std::vector<Case>{{1, 8, 8}, {37, 50, 100}, {130, 72, 130}, {2, 200, 64}, {20, 24, 500}, {9, 16, 3}}) {
    const int64_t rows = c.rows, cols = c.cols;
    auto w = trellis::quantize_matrix(test::random_floats(size_t(rows * cols), seed++, 0.1f), rows, cols);
    auto bias = trellis::raw_f16(test::random_floats(size_t(rows), seed++), {rows});
    trellis::TensorView wv{"w", w.shape, true, rows, cols, w.padded_rows, w.padded_columns, w.data, w.scales};
    trellis::TensorView bv{"b", bias.shape, false, 0, 0, 0, 0, bias.data, {}};
    const auto wf = trellis::dequantize(wv), bf = trellis::dequantize(bv);
    const kernels::QuantizedMatrix m = trellis::upload_linear(test_device(), wv, bv);
    auto x = test::random_floats(size_t(c.tokens) * c.cols, seed++);
    x[0] = 0;  // a zero among the values; below, a whole zero group
    if (c.tokens > 3) std::fill(x.begin() + 3 * c.cols, x.begin() + 3 * c.cols + std::min<uint32_t>(64, c.cols), 0.0f);
    auto ref = reference::linear(quantized_activations(x, c.tokens, c.cols), c.tokens, c.cols, wf, bf, c.rows);
    auto f32_ref = reference::linear(x, c.tokens, c.cols, wf, bf, c.rows);
    std::vector<float> y0(size_t(c.tokens) * c.rows, test::kPoison), extra;
    const uint32_t tpb = (c.tokens + 1) / 2, period = c.tokens > 3 ? 3 : 1;
    auto apply = [&](std::vector<float>& r) {
      for (uint32_t t = 0; t < c.tokens; t++)
        for (uint32_t j = 0; j < c.rows; j++) {
          float& v = r[t * c.rows + j];
          if (epilogue == kernels::Epilogue::Gelu) v = reference::gelu_tanh(v);
          if (epilogue == kernels::Epilogue::GatedResidual) v = y0[t * c.rows + j] + extra[(t / tpb) * c.rows + 5 + j] * v;
          if (epilogue == kernels::Epilogue::Residual) v = y0[t * c.rows + j] + v;
          if (epilogue == kernels::Epilogue::AddRows) v += extra[(t % period) * c.rows + j];
        }
    };
    if (epilogue == kernels::Epilogue::GatedResidual || epilogue == kernels::Epilogue::Residual) {
      y0 = test::random_floats(y0.size(), seed++);
      extra = test::random_floats(2 * c.rows + 5, seed++);
    } else if (epilogue == kernels::Epilogue::AddRows) {
      extra = test::random_floats(size_t(period) * c.rows, seed++);
    }
    apply(ref);
    apply(f32_ref);
    gpu::Buffer xb = upload(x), yb = upload(y0, "y");
    gpu::Buffer eb = upload(extra.empty() ? std::vector<float>(4) : extra, "extra");
    gpu::Buffer quant = upload(std::vector<float>(kernels::qmatmul_quant_bytes(m, c.tokens) / 4, test::kPoison), "x quant");
    gpu::Buffer scratch;
    kernels::QMatmulArgs args{.x = &xb, .x_stride = c.cols, .w = &m, .y = &yb, .y_stride = c.rows, .tokens = c.tokens,
                              .epilogue = epilogue, .extra = &eb, .tokens_per_batch = tpb, .gate_stride = c.rows,
                              .gate_offset = 5, .add_period = period, .geometry = geometry, .x_quant = &quant};
    if (geometry.k_splits > 1) {
      scratch = upload(std::vector<float>(kernels::qmatmul_split_floats(m, c.tokens, geometry.k_splits), test::kPoison), "split");
      args.split_partials = &scratch;
    }
    gpu::Recorder rec(test_device());
    for (const auto& d : kernels::qmatmul_dispatches(test_kernels(), args)) d.record(rec);
    rec.submit();
    auto got = test_device().download_as<float>(yb);
    // A value exactly between two steps may round either way on the GPU: a few quanta at most.
    EXPECT_LT(test::rel_l2(got, ref), 1e-4) << c.tokens << "x" << c.rows << "x" << c.cols;
    EXPECT_LT(test::rel_l2(got, f32_ref), 2e-2) << "int8 activations far from the f32 path at " << c.tokens << "x" << c.rows << "x" << c.cols;
  }
}

std::string name(const ::testing::TestParamInfo<QMatmulInt8::ParamType>& info) {
  const auto& g = std::get<0>(info.param);
  static const char* names[] = {"none", "gelu", "gate", "residual", "addrows"};
  std::string n = "t";
  n += std::to_string(g.wg_tokens);
  n += "r";
  n += std::to_string(g.wg_rows);
  if (g.k_splits > 1) {
    n += "s";
    n += std::to_string(g.k_splits);
  }
  n += g.rows_per_thread == 16 ? "m16_" : "_";
  n += names[int(std::get<1>(info.param))];
  return n;
}

kernels::QMatmulGeometry i8(uint32_t t, uint32_t r, uint32_t splits = 1, uint32_t rows = 8) {
  return {.wg_tokens = t, .wg_rows = r, .k_splits = splits, .rows_per_thread = rows, .int8 = true};
}

// Each geometry with one epilogue (every epilogue at least once, each also through split-K's
// sum pass): the geometries are independent of the epilogue code, which qmatmul_epilogue.wgsl
// shares with the f32 path (whose tests cross every pair).
INSTANTIATE_TEST_SUITE_P(Variants, QMatmulInt8,
                         ::testing::Values(std::make_tuple(i8(2, 2), kernels::Epilogue::None),
                                           std::make_tuple(i8(4, 8), kernels::Epilogue::Gelu),
                                           std::make_tuple(i8(16, 16), kernels::Epilogue::GatedResidual),
                                           std::make_tuple(i8(8, 4, 1, 16), kernels::Epilogue::Residual),
                                           std::make_tuple(i8(4, 4), kernels::Epilogue::AddRows),
                                           std::make_tuple(i8(4, 4, 3), kernels::Epilogue::AddRows),
                                           std::make_tuple(i8(16, 8, 2, 16), kernels::Epilogue::GatedResidual),
                                           std::make_tuple(i8(2, 4, 2), kernels::Epilogue::Gelu)),
                         name);

}  // namespace

TEST(QMatmulInt8Errors, MissingScratchAndBadGeometryAreRejected) {
  if (!has_dot4()) GTEST_SKIP() << "no packed_4x8_integer_dot_product";
  auto w = trellis::quantize_matrix(test::random_floats(16 * 64, 1), 16, 64);
  auto bias = trellis::raw_f16(test::random_floats(16, 2), {16});
  trellis::TensorView wv{"w", w.shape, true, 16, 64, w.padded_rows, w.padded_columns, w.data, w.scales};
  trellis::TensorView bv{"b", bias.shape, false, 0, 0, 0, 0, bias.data, {}};
  const auto m = trellis::upload_linear(test_device(), wv, bv);
  gpu::Buffer x = upload(std::vector<float>(64 * 4)), y = upload(std::vector<float>(16 * 4));
  gpu::Buffer small = upload(std::vector<float>(8));
  kernels::QMatmulArgs a{.x = &x, .x_stride = 64, .w = &m, .y = &y, .y_stride = 16, .tokens = 4, .geometry = i8(2, 2)};
  EXPECT_THROW(kernels::qmatmul_dispatches(test_kernels(), a), Error);  // no x_quant
  a.x_quant = &small;
  EXPECT_THROW(kernels::qmatmul_dispatches(test_kernels(), a), Error);  // too small
  gpu::Buffer quant = upload(std::vector<float>(kernels::qmatmul_quant_bytes(m, 4) / 4));
  a.x_quant = &quant;
  EXPECT_EQ(kernels::qmatmul_dispatches(test_kernels(), a).size(), 2u);
  EXPECT_THROW(kernels::qmatmul(test_kernels(), a), Error);  // several dispatches
  a.geometry.wg_rows = 3;
  EXPECT_THROW(kernels::qmatmul_dispatches(test_kernels(), a), Error);
}
