// The ss-flow kernel families, each against tests/reference on fresh random data at awkward sizes
// (not multiples of the tiles), every variant, outputs poisoned first.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"
#include "kernel_test_util.h"
#include "kernels/flash_attention.h"
#include "kernels/flow_elementwise.h"
#include "kernels/layer_norm.h"
#include "kernels/qmatmul.h"
#include "reference/ss_flow_reference.h"
#include "trellis/stage_upload.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

gpu::Buffer upload(const std::vector<float>& v, const std::string& label = "in") { return test::buffer_from(v, label); }

gpu::Buffer poisoned(size_t n, const std::string& label = "out") { return upload(std::vector<float>(n, test::kPoison), label); }

void run(const kernels::Dispatch& d) {
  gpu::Recorder rec(test_device());
  d.record(rec);
  rec.submit();
}

std::vector<float> read(const gpu::Buffer& b) { return test_device().download_as<float>(b); }

// A random matrix quantized as the pack stores it, plus its dequantized values and bias.
struct TestLinear {
  trellis::HostTensor w, b;
  std::vector<float> wf, bf;
  kernels::QuantizedMatrix gpu;
};

TestLinear make_linear(int64_t rows, int64_t cols, uint32_t seed) {
  TestLinear l;
  l.w = trellis::quantize_matrix(test::random_floats(size_t(rows * cols), seed, 0.1f), rows, cols);
  l.b = trellis::raw_f16(test::random_floats(size_t(rows), seed + 1000), {rows});
  trellis::TensorView wv{"w", l.w.shape, true, rows, cols, l.w.padded_rows, l.w.padded_columns, l.w.data, l.w.scales};
  trellis::TensorView bv{"b", l.b.shape, false, 0, 0, 0, 0, l.b.data, {}};
  l.wf = trellis::dequantize(wv);
  l.bf = trellis::dequantize(bv);
  l.gpu = trellis::upload_linear(test_device(), wv, bv);
  return l;
}

}  // namespace

TEST(SsFlowKernels, QuantizeRoundTripsWithinOneStep) {
  auto w = test::random_floats(37 * 70, 5);
  auto h = trellis::quantize_matrix(w, 37, 70);
  EXPECT_EQ(h.padded_rows, 48);
  EXPECT_EQ(h.padded_columns, 128);
  trellis::TensorView v{"w", h.shape, true, 37, 70, 48, 128, h.data, h.scales};
  auto back = trellis::dequantize(v);
  EXPECT_LT(test::rel_l2(back, w), 0.01);
}

struct MatmulCase {
  uint32_t tokens, rows, cols;
};

class SsFlowQMatmul : public ::testing::TestWithParam<std::tuple<kernels::QMatmulGeometry, kernels::Epilogue>> {};

TEST_P(SsFlowQMatmul, MatchesReference) {
  auto [geometry, epilogue] = GetParam();
  uint32_t seed = 10;
  for (auto c : std::vector<MatmulCase>{{1, 8, 8}, {37, 50, 100}, {130, 72, 130}, {2, 200, 64}, {20, 24, 500}}) {
    TestLinear l = make_linear(c.rows, c.cols, seed++);
    auto x = test::random_floats(size_t(c.tokens) * c.cols, seed++);
    auto ref = reference::linear(x, c.tokens, c.cols, l.wf, l.bf, c.rows);
    std::vector<float> y0(size_t(c.tokens) * c.rows, test::kPoison);
    std::vector<float> extra;
    const uint32_t tpb = (c.tokens + 1) / 2, period = c.tokens > 3 ? 3 : 1;
    if (epilogue == kernels::Epilogue::Gelu) {
      for (auto& e : ref) e = reference::gelu_tanh(e);
    } else if (epilogue == kernels::Epilogue::GatedResidual || epilogue == kernels::Epilogue::Residual) {
      y0 = test::random_floats(y0.size(), seed++);
      extra = test::random_floats(2 * c.rows + 5, seed++);  // two batches of gates at offset 5
      for (uint32_t t = 0; t < c.tokens; t++)
        for (uint32_t r = 0; r < c.rows; r++) {
          const float g = epilogue == kernels::Epilogue::Residual ? 1.0f : extra[(t / tpb) * c.rows + 5 + r];
          ref[t * c.rows + r] = y0[t * c.rows + r] + g * ref[t * c.rows + r];
        }
    } else if (epilogue == kernels::Epilogue::AddRows) {
      extra = test::random_floats(size_t(period) * c.rows, seed++);
      for (uint32_t t = 0; t < c.tokens; t++)
        for (uint32_t r = 0; r < c.rows; r++) ref[t * c.rows + r] += extra[(t % period) * c.rows + r];
    }
    gpu::Buffer xb = upload(x), yb = upload(y0, "y");
    gpu::Buffer eb = upload(extra.empty() ? std::vector<float>(4) : extra, "extra");
    kernels::QMatmulArgs args{.x = &xb, .x_stride = c.cols, .w = &l.gpu, .y = &yb, .y_stride = c.rows, .tokens = c.tokens,
                              .epilogue = epilogue, .extra = &eb, .tokens_per_batch = tpb, .gate_stride = c.rows,
                              .gate_offset = 5, .add_period = period, .geometry = geometry};
    gpu::Buffer scratch;
    if (geometry.k_splits > 1) {
      scratch = poisoned(size_t(kernels::qmatmul_split_floats(l.gpu, c.tokens, geometry.k_splits)), "split partials");
      args.split_partials = &scratch;
    }
    gpu::Recorder rec(test_device());
    for (const auto& d : kernels::qmatmul_dispatches(test_kernels(), args)) d.record(rec);
    rec.submit();
    EXPECT_LT(test::rel_l2(read(yb), ref), test::kF32Tolerance) << c.tokens << "x" << c.rows << "x" << c.cols;
  }
}

std::string matmul_name(const ::testing::TestParamInfo<SsFlowQMatmul::ParamType>& info) {
  const auto& g = std::get<0>(info.param);
  static const char* names[] = {"none", "gelu", "gate", "residual", "addrows"};
  std::string n = "t";
  n += std::to_string(g.wg_tokens);
  n += "r";
  n += std::to_string(g.wg_rows);
  n += "k";
  n += std::to_string(g.k_step);
  n += g.vec4 ? "v4" : "";
  n += g.k_splits > 1 ? "s" + std::to_string(g.k_splits) : "";
  n += g.prefetch ? "p" : "";
  n += g.rows_per_thread == 16 ? "m16_" : "_";
  n += names[int(std::get<1>(info.param))];
  return n;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, SsFlowQMatmul,
    ::testing::Combine(::testing::Values(kernels::QMatmulGeometry{2, 2, 16, false}, kernels::QMatmulGeometry{4, 8, 32, false},
                                         kernels::QMatmulGeometry{16, 16, 16, false}, kernels::QMatmulGeometry{2, 2, 16, true},
                                         kernels::QMatmulGeometry{4, 8, 32, true}, kernels::QMatmulGeometry{16, 16, 16, true},
                                         // split-K: 2 chunks; 5 asked, capped by the 64-column groups (4 chunks of 128 at 500 columns)
                                         kernels::QMatmulGeometry{2, 2, 16, false, 2}, kernels::QMatmulGeometry{4, 8, 32, true, 5},
                                         // prefetch applies at these (16 / 8 / 8 X floats, 2 / 4 / 2 W words a thread),
                                         // the ones above fall back to plain loads
                                         kernels::QMatmulGeometry{16, 8, 16, true}, kernels::QMatmulGeometry{8, 16, 16, false},
                                         kernels::QMatmulGeometry{16, 16, 16, true, 3},
                                         kernels::QMatmulGeometry{16, 16, 16, true, 1, false},
                                         // 16 rows a thread: prefetch (4 W words), plain loads, split-K
                                         kernels::QMatmulGeometry{16, 16, 16, true, 1, true, 16},
                                         kernels::QMatmulGeometry{4, 8, 32, false, 1, true, 16},
                                         kernels::QMatmulGeometry{8, 16, 16, true, 3, true, 16}),
                       ::testing::Values(kernels::Epilogue::None, kernels::Epilogue::Gelu, kernels::Epilogue::GatedResidual,
                                         kernels::Epilogue::Residual, kernels::Epilogue::AddRows)),
    matmul_name);

class SsFlowLayerNorm : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {};

TEST_P(SsFlowLayerNorm, MatchesReference) {
  auto [affine, modulate, subgroups] = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  uint32_t seed = 50;
  // With subgroups, 768, 128 and 1024 channels take the 8-lanes-per-row path (1 to 32 vec4 a lane;
  // 33 and 7 rows leave part of the last workgroup idle).
  for (auto [rows, ch] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 7}, {5, 300}, {33, 768}, {10, 128}, {7, 1024}}) {
    auto x = test::random_floats(size_t(rows) * ch, seed++, 3.0f);
    for (size_t i = 0; i < x.size(); i++) x[i] += 2.0f;  // a mean far from zero
    auto wh = trellis::raw_f16(test::random_floats(ch, seed++), {ch});
    auto bh = trellis::raw_f16(test::random_floats(ch, seed++), {ch});
    auto wf = trellis::dequantize({"w", wh.shape, false, 0, 0, 0, 0, wh.data, {}});
    auto bf = trellis::dequantize({"b", bh.shape, false, 0, 0, 0, 0, bh.data, {}});
    const uint32_t tpb = (rows + 1) / 2, stride = 3 * ch;
    auto mods = test::random_floats(2 * stride, seed++);
    auto ref = affine ? reference::layer_norm(x, rows, ch, 1e-6, wf, bf) : reference::layer_norm(x, rows, ch, 1e-6);
    if (modulate)
      for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < ch; c++) {
          const float* m = &mods[(r / tpb) * stride];
          ref[r * ch + c] = ref[r * ch + c] * (1.0f + m[2 * ch + c]) + m[ch + c];
        }
    gpu::Buffer xb = upload(x), yb = poisoned(x.size()), mb = upload(mods, "mods");
    gpu::Buffer wb = trellis::upload_bytes(test_device(), wh.data, "w"), bb = trellis::upload_bytes(test_device(), bh.data, "b");
    kernels::LayerNormArgs a{.x = &xb, .y = &yb, .rows = rows, .channels = ch, .eps = 1e-6f};
    if (affine) {
      a.weight = &wb;
      a.bias = &bb;
    }
    if (modulate) {
      a.mods = &mb;
      a.tokens_per_batch = tpb;
      a.mod_stride = stride;
      a.shift_offset = ch;
      a.scale_offset = 2 * ch;
    }
    a.subgroups = subgroups;
    a.workgroup = 64;
    run(kernels::layer_norm(test_kernels(), a));
    EXPECT_LT(test::rel_l2(read(yb), ref), test::kF32Tolerance) << rows << "x" << ch;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SsFlowLayerNorm, ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "affine" : "plain") +
                                  (std::get<1>(info.param) ? "_mod" : "") + (std::get<2>(info.param) ? "_subgroup" : "_shared");
                         });

TEST(SsFlowKernels, HeadRmsNormMatchesReference) {
  const uint32_t rows = 37, heads = 3, stride = 3 * heads * 64;
  auto x = test::random_floats(size_t(rows) * stride, 70, 2.0f);
  std::fill(x.begin() + 3 * stride, x.begin() + 3 * stride + 64, 0.0f);  // a zero q vector: the 1e-12 floor
  auto gq = trellis::raw_f16(test::random_floats(heads * 64, 71), {heads, 64});
  auto gk = trellis::raw_f16(test::random_floats(heads * 64, 72), {heads, 64});
  auto ref = x;
  reference::head_rms_norm(ref, rows, stride, 0, heads, trellis::dequantize({"q", gq.shape, false, 0, 0, 0, 0, gq.data, {}}));
  reference::head_rms_norm(ref, rows, stride, heads * 64, heads, trellis::dequantize({"k", gk.shape, false, 0, 0, 0, 0, gk.data, {}}));
  gpu::Buffer qb = trellis::upload_bytes(test_device(), gq.data, "gq"), kb = trellis::upload_bytes(test_device(), gk.data, "gk");
  for (bool subgroups : {false, true}) {  // one invocation per vector; 8 lanes per vector (where the device has subgroups)
    gpu::Buffer xb = upload(x);
    run(kernels::head_rms_norm(test_kernels(), {.x = &xb, .gamma_q = &qb, .gamma_k = &kb, .rows = rows, .heads = heads,
                                                .stride = stride, .q_offset = 0, .k_offset = heads * 64, .subgroups = subgroups}));
    EXPECT_LT(test::rel_l2(read(xb), ref), test::kF32Tolerance) << (subgroups ? "subgroups" : "per vector");
  }
}

struct AttentionCase {
  uint32_t batch, heads, nq, nk;
  bool self;
};

struct FlashCase {
  std::string name;
  kernels::FlashVariant variant;
  uint32_t queries = 64, keys = 32;  // plain and quad
  kernels::FlashTiledGeometry tiled{};
  bool prefetch = false;  // quad, oct: the next K/V tile through registers
  uint32_t key_splits = 1;  // oct: keys split over workgroups, then merged
  bool lazy_rescale = false, fused_pv = false;  // oct
};

void PrintTo(const FlashCase& c, std::ostream* os) { *os << c.name; }

class SsFlowFlashAttention : public ::testing::TestWithParam<FlashCase> {};

TEST_P(SsFlowFlashAttention, MatchesReferenceAtAwkwardLengths) {
  const FlashCase& fc = GetParam();
  const gpu::Device& dev = test_device();
  if (fc.variant != kernels::FlashVariant::Plain && !dev.has_subgroups()) GTEST_SKIP() << "no subgroups";
  if ((fc.variant == kernels::FlashVariant::Tiled || fc.variant == kernels::FlashVariant::Oct) && dev.subgroup_size() % 8) GTEST_SKIP() << "subgroups of " << dev.subgroup_size();
  const bool tiled = fc.variant == kernels::FlashVariant::Tiled;
  uint32_t seed = 80;
  for (uint32_t head_dim : tiled ? std::vector<uint32_t>{64, 32} : std::vector<uint32_t>{64}) {
    if (tiled && kernels::flash_tiled_workgroup_bytes(fc.tiled, head_dim) > dev.limits().maxComputeWorkgroupStorageSize) {
      std::printf("[ skipped  ] head size %u: more workgroup memory than this device has\n", head_dim);
      continue;
    }
    for (auto c : std::vector<AttentionCase>{{1, 1, 1, 1, true}, {1, 2, 70, 70, true}, {2, 2, 131, 131, true},
                                             {1, 1, 77, 200, false}, {2, 2, 200, 200, true}, {1, 1, 333, 333, true},
                                             {2, 3, 65, 77, false}, {1, 1, 33, 7, false}}) {
      const uint32_t C = c.heads * head_dim;
      std::vector<float> q, kv;
      uint32_t q_stride, kv_stride, k_off, v_off;
      if (c.self) {  // q | k | v in one buffer, as to_qkv writes it
        q_stride = kv_stride = 3 * C;
        k_off = C;
        v_off = 2 * C;
        q = test::random_floats(size_t(c.batch) * c.nq * q_stride, seed++, 2.0f);
      } else {
        q_stride = C;
        kv_stride = 2 * C;
        k_off = 0;
        v_off = C;
        q = test::random_floats(size_t(c.batch) * c.nq * q_stride, seed++, 2.0f);
        kv = test::random_floats(size_t(c.batch) * c.nk * kv_stride, seed++);
      }
      const auto& kvh = c.self ? q : kv;
      std::vector<float> ref;
      for (uint32_t b = 0; b < c.batch; b++) {
        std::vector<float> qb(q.begin() + size_t(b) * c.nq * q_stride, q.begin() + size_t(b + 1) * c.nq * q_stride);
        std::vector<float> kb(kvh.begin() + size_t(b) * c.nk * kv_stride, kvh.begin() + size_t(b + 1) * c.nk * kv_stride);
        auto r = reference::attention(qb, c.nq, q_stride, 0, kb, c.nk, kv_stride, k_off, v_off, c.heads, 0.125, head_dim);
        ref.insert(ref.end(), r.begin(), r.end());
      }
      gpu::Buffer qbuf = upload(q), kvbuf = upload(c.self ? std::vector<float>(4) : kv), out = poisoned(ref.size());
      kernels::FlashAttentionArgs args{.q = &qbuf, .kv = c.self ? &qbuf : &kvbuf, .out = &out, .batch = c.batch, .heads = c.heads,
                                       .nq = c.nq, .nk = c.nk, .q_stride = q_stride, .q_offset = 0, .kv_stride = kv_stride,
                                       .k_offset = k_off, .v_offset = v_off, .o_stride = C, .scale = 0.125f,
                                       .variant = fc.variant, .queries_per_workgroup = fc.queries, .keys_per_tile = fc.keys,
                                       .prefetch_tile = fc.prefetch, .tiled = fc.tiled, .head_dim = head_dim,
                                       .key_splits = fc.key_splits, .lazy_rescale = fc.lazy_rescale, .fused_pv = fc.fused_pv};
      const uint64_t partial_floats = kernels::flash_partials_floats(args);
      gpu::Buffer partials = poisoned(std::max<uint64_t>(partial_floats, 4), "partials");
      args.partials = &partials;
      gpu::Recorder rec(test_device());
      for (const auto& d : kernels::flash_attention_dispatches(test_kernels(), args)) d.record(rec);
      rec.submit();
      EXPECT_LT(test::rel_l2(read(out), ref), test::kF32Tolerance)
          << "head size " << head_dim << ", " << c.batch << "x" << c.heads << " " << c.nq << "x" << c.nk;
    }
  }
}

using kernels::FlashVariant;
INSTANTIATE_TEST_SUITE_P(Variants, SsFlowFlashAttention,
                         ::testing::Values(FlashCase{"bq32", FlashVariant::Plain, 32}, FlashCase{"bq64", FlashVariant::Plain, 64},
                                           FlashCase{"quad_bq32", FlashVariant::Quad, 32, 32},
                                           FlashCase{"quad_bq64", FlashVariant::Quad, 64, 64},
                                           // Prefetch: 8 and 4 vec4 of K and of V per thread and tile.
                                           FlashCase{"quad_bq32_k16_prefetch", FlashVariant::Quad, 32, 16, {}, true},
                                           FlashCase{"quad_bq128_prefetch", FlashVariant::Quad, 128, 32, {}, true},
                                           FlashCase{"oct_bq64", FlashVariant::Oct, 64, 32},
                                           FlashCase{"oct_bq128_prefetch", FlashVariant::Oct, 128, 32, {}, true},
                                           FlashCase{"oct_bq32_k16_prefetch", FlashVariant::Oct, 32, 16, {}, true},
                                           // Key splits: chunks of whole tiles, the last one partial (or
                                           // fewer splits where the keys are too few, e.g. 7 keys).
                                           FlashCase{"oct_bq128_prefetch_split2", FlashVariant::Oct, 128, 32, {}, true, 2},
                                           FlashCase{"oct_bq64_k16_split3", FlashVariant::Oct, 64, 16, {}, false, 3},
                                           FlashCase{"oct_bq128_prefetch_lazy", FlashVariant::Oct, 128, 32, {}, true, 2, true},
                                           FlashCase{"oct_bq64_fused", FlashVariant::Oct, 64, 32, {}, true, 1, false, true},
                                           FlashCase{"oct_bq64_lazy_fused", FlashVariant::Oct, 64, 16, {}, false, 3, true, true},
                                           // Tiled: queries per workgroup / per thread / keys per thread. 64/8/8
                                           // and 64/4/8 need 48 KiB at head size 64 (H200), so lavapipe's 32 KiB
                                           // runs them at head size 32 only.
                                           FlashCase{"tiled_64_8_8", FlashVariant::Tiled, 0, 0, {64, 8, 8}},
                                           FlashCase{"tiled_64_8_4", FlashVariant::Tiled, 0, 0, {64, 8, 4}},
                                           FlashCase{"tiled_64_4_8", FlashVariant::Tiled, 0, 0, {64, 4, 8}},
                                           FlashCase{"tiled_24_8_4", FlashVariant::Tiled, 0, 0, {24, 8, 4}},
                                           FlashCase{"tiled_64_8_4_prefetch", FlashVariant::Tiled, 0, 0, {64, 8, 4, true}},
                                           FlashCase{"tiled_64_4_8_prefetch", FlashVariant::Tiled, 0, 0, {64, 4, 8, true}}),
                         [](const auto& info) { return info.param.name; });

TEST(SsFlowKernels, TiledFlashAttentionRejectsGeometriesThatDoNotFit) {
  if (!test_device().has_subgroups() || test_device().subgroup_size() % 8) GTEST_SKIP() << "no subgroups of 8";
  gpu::Buffer b = upload(std::vector<float>(3 * 64 * 4));
  auto args = [&](kernels::FlashTiledGeometry g) {
    return kernels::FlashAttentionArgs{.q = &b, .kv = &b, .out = &b, .batch = 1, .heads = 1, .nq = 4, .nk = 4, .q_stride = 192,
                                       .q_offset = 0, .kv_stride = 192, .k_offset = 64, .v_offset = 128, .o_stride = 64,
                                       .scale = 0.125f, .variant = FlashVariant::Tiled, .tiled = g};
  };
  EXPECT_THROW(kernels::flash_attention(test_kernels(), args({64, 6, 8})), Error);   // 6 queries per thread
  EXPECT_THROW(kernels::flash_attention(test_kernels(), args({60, 8, 8})), Error);   // not a multiple of 8
  EXPECT_THROW(kernels::flash_attention(test_kernels(), args({1024, 8, 8})), Error); // workgroup memory
  auto a = args({64, 8, 4});
  a.head_dim = 48;
  EXPECT_THROW(kernels::flash_attention(test_kernels(), a), Error);
}

TEST(SsFlowKernels, QuadTilePrefetchRejectsTilesThatDoNotSplitEvenly) {
  if (!test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  gpu::Buffer b = upload(std::vector<float>(3 * 64 * 4));
  auto args = [&](uint32_t queries, uint32_t keys) {
    return kernels::FlashAttentionArgs{.q = &b, .kv = &b, .out = &b, .batch = 1, .heads = 1, .nq = 4, .nk = 4, .q_stride = 192,
                                       .q_offset = 0, .kv_stride = 192, .k_offset = 64, .v_offset = 128, .o_stride = 64,
                                       .scale = 0.125f, .variant = FlashVariant::Quad, .queries_per_workgroup = queries,
                                       .keys_per_tile = keys, .prefetch_tile = true};
  };
  EXPECT_THROW(kernels::flash_attention(test_kernels(), args(96, 32)), Error);  // 512 vec4 over 96 threads
  EXPECT_THROW(kernels::flash_attention(test_kernels(), args(32, 32)), Error);  // 16 per thread, above 8
  EXPECT_NO_THROW(kernels::flash_attention(test_kernels(), args(64, 32)));
}

TEST(SsFlowKernels, KeySplitAttentionRejectsWhatItCannotRun) {
  if (!test_device().has_subgroups() || test_device().subgroup_size() % 8) GTEST_SKIP() << "no subgroups of 8";
  gpu::Buffer b = upload(std::vector<float>(3 * 64 * 64));
  kernels::FlashAttentionArgs a{.q = &b, .kv = &b, .out = &b, .batch = 1, .heads = 1, .nq = 64, .nk = 64, .q_stride = 192,
                                .q_offset = 0, .kv_stride = 192, .k_offset = 64, .v_offset = 128, .o_stride = 64,
                                .scale = 0.125f, .variant = FlashVariant::Oct, .queries_per_workgroup = 64, .keys_per_tile = 32,
                                .key_splits = 2};
  EXPECT_THROW(kernels::flash_attention(test_kernels(), a), Error);             // two dispatches
  EXPECT_THROW(kernels::flash_attention_dispatches(test_kernels(), a), Error);  // no partials buffer
  gpu::Buffer small = upload(std::vector<float>(kernels::flash_partials_floats(a) - 4));
  a.partials = &small;
  EXPECT_THROW(kernels::flash_attention_dispatches(test_kernels(), a), Error);  // too small
  gpu::Buffer partials = upload(std::vector<float>(kernels::flash_partials_floats(a)));
  a.partials = &partials;
  EXPECT_EQ(kernels::flash_attention_dispatches(test_kernels(), a).size(), 2u);
  a.variant = FlashVariant::Quad;
  EXPECT_THROW(kernels::flash_attention_dispatches(test_kernels(), a), Error);  // oct only
  a.variant = FlashVariant::Oct;
  a.nk = 20;  // one tile: no split, no merge
  EXPECT_EQ(kernels::flash_partials_floats(a), 0u);
  EXPECT_EQ(kernels::flash_attention_dispatches(test_kernels(), a).size(), 1u);
}

// Scores that climb along the keys (by ~0.69 in log2 a key, 230 over the row, past f32's 2^128): the
// lazy rescale has to catch up many times (a stale max would overflow), each stale stretch exact.
TEST(SsFlowKernels, OctLazyRescaleFollowsAGrowingMax) {
  if (!test_device().has_subgroups() || test_device().subgroup_size() % 8) GTEST_SKIP() << "no subgroups of 8";
  const uint32_t nq = 40, nk = 333, C = 64;
  std::vector<float> qkv = test::random_floats(size_t(std::max(nq, nk)) * 3 * C, 90);
  for (uint32_t t = 0; t < std::max(nq, nk); t++)
    for (uint32_t d = 0; d < C; d++) {
      qkv[size_t(t) * 3 * C + d] = 1.0f;                  // q
      qkv[size_t(t) * 3 * C + C + d] = 0.06f * float(t);  // k
    }
  auto ref = reference::attention(qkv, nq, 3 * C, 0, qkv, nk, 3 * C, C, 2 * C, 1, 0.125, C);
  for (bool fused : {false, true}) {
    gpu::Buffer b = upload(qkv), out = poisoned(ref.size());
    run(kernels::flash_attention(test_kernels(), {.q = &b, .kv = &b, .out = &out, .batch = 1, .heads = 1, .nq = nq, .nk = nk,
                                                  .q_stride = 3 * C, .q_offset = 0, .kv_stride = 3 * C, .k_offset = C,
                                                  .v_offset = 2 * C, .o_stride = C, .scale = 0.125f, .variant = FlashVariant::Oct,
                                                  .queries_per_workgroup = 64, .keys_per_tile = 32, .lazy_rescale = true,
                                                  .fused_pv = fused}));
    EXPECT_LT(test::rel_l2(read(out), ref), test::kF32Tolerance) << (fused ? "per-key PV" : "");
  }
}

TEST(SsFlowKernels, ActivationsMatchReference) {
  for (auto [f, n] : {std::pair{kernels::Activation::Silu, 1001}, {kernels::Activation::GeluTanh, 1001},
                      {kernels::Activation::Silu, 1000}, {kernels::Activation::GeluTanh, 1000}}) {  // scalar; vec4
    auto x = test::random_floats(size_t(n), 90, 4.0f);
    x[0] = 80.0f;  // saturated ends
    x[1] = -80.0f;
    std::vector<float> ref(x.size());
    for (size_t i = 0; i < x.size(); i++)
      ref[i] = f == kernels::Activation::Silu ? reference::silu(x[i]) : reference::gelu_tanh(x[i]);
    gpu::Buffer b = upload(x);
    run(kernels::activation(test_kernels(), f, b, uint32_t(x.size())));
    EXPECT_LT(test::rel_l2(read(b), ref), test::kF32Tolerance);
  }
}

TEST(SsFlowKernels, EulerStepMatchesReference) {
  for (uint32_t guided : {0u, 1u}) {
    const uint32_t n = 999;
    auto x = test::random_floats(n, 95), vel = test::random_floats(2 * n, 96);
    const float dt = 0.0371f, s = 7.5f;
    std::vector<float> ref(n), ref_v(2 * n);
    for (uint32_t i = 0; i < n; i++) {
      const double v = guided ? (1.0 + s) * vel[i] - double(s) * vel[n + i] : vel[i];
      ref[i] = float(x[i] - dt * v);
      ref_v[i] = float(v);
      ref_v[n + i] = vel[n + i];  // the unconditional row is left alone
    }
    gpu::Buffer xb = upload(x), vb = upload(vel);
    gpu::Buffer pb = test_device().create_uniform(kernels::EulerParams{n, guided, dt, s}, "euler");
    run(kernels::euler_step(test_kernels(), xb, vb, pb, n));
    EXPECT_LT(test::rel_l2(read(xb), ref), test::kF32Tolerance);
    EXPECT_LT(test::rel_l2(read(vb), ref_v), test::kF32Tolerance) << "the guided velocity replaces row 0";
  }
}
