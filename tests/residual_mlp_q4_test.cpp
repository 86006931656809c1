// The one-dispatch out projection + gated MLP (residual_mlp_q4.wgsl) against the reference block
// computed from the same dequantized weights, over several steps (the scratch words' tag parity
// alternates), with grids of one workgroup and of several (workgroups waiting for each other's
// words), and a grid that cannot be resident at once must report it instead of hanging.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/lfm2/residual_mlp_q4.h"
#include "kernels/step.h"
#include "q4_gpu.h"
#include "reference/llm_ops_reference.h"

using namespace ember;

namespace {

struct Block {
  uint32_t hidden, ffn, proj_cols;
  reference::Q4Host proj, gate_up, down;
  std::vector<float> norm_w;
};

Block make_block(uint32_t hidden, uint32_t ffn, uint32_t proj_cols, uint32_t seed) {
  Block b{hidden, ffn, proj_cols, {}, {}, {}, test::random_floats(hidden, seed + 3)};
  b.proj = reference::quantize_q4_symmetric(test::random_floats(size_t(hidden) * proj_cols, seed, 0.5f), hidden, proj_cols);
  b.gate_up = reference::quantize_q4_symmetric(test::random_floats(size_t(2) * ffn * hidden, seed + 1), 2 * ffn, hidden);
  b.down = reference::quantize_q4_symmetric(test::random_floats(size_t(hidden) * ffn, seed + 2, 0.5f), hidden, ffn);
  return b;
}

// x + Wo y, then that + Wd(silu(Wg n) * Wu n) with n its RMSNorm times norm_w.
std::vector<float> reference_block(const Block& b, const std::vector<float>& x, const std::vector<float>& y, float eps) {
  auto m = reference::matvec(reference::dequantize_q4(b.proj), b.hidden, b.proj_cols, y);
  for (uint32_t i = 0; i < b.hidden; i++) m[i] += x[i];
  auto n = reference::rmsnorm(m, b.norm_w, 1, b.hidden, eps);
  auto out = reference::mlp(reference::dequantize_q4(b.gate_up), reference::dequantize_q4(b.down), b.hidden, b.ffn, n);
  for (uint32_t i = 0; i < b.hidden; i++) out[i] += m[i];
  return out;
}

// Runs `steps` blocks in a row on fresh inputs (one submit each, decode_step 1, 2, ...) and returns
// the worst relative L2 error; `status` gets the kernel's status word.
double run_steps(const Block& b, kernels::ResidualMlpConfig cfg, uint32_t steps, uint32_t seed, uint32_t* status = nullptr) {
  auto& dev = test::test_device();
  cfg.hidden = b.hidden;
  cfg.ffn = b.ffn;
  cfg.proj_cols = b.proj_cols;
  kernels::ResidualMlpQ4 k(test::test_kernels(), cfg);
  auto w = test::upload_q4_together({&b.proj, &b.gate_up, &b.down});
  const kernels::Q4Matrix &proj = w.matrices[0], &gu = w.matrices[1], &down = w.matrices[2];
  gpu::Buffer nb = test::upload_floats(b.norm_w, "norm_w");
  gpu::Buffer xb = dev.create_storage(uint64_t(b.hidden) * 4, "x");
  gpu::Buffer yb = dev.create_storage(uint64_t(b.proj_cols) * 4, "y");
  gpu::Buffer scratch = test::upload_floats(std::vector<float>(k.scratch_bytes() / 4, 0.0f), "scratch");
  gpu::Buffer step = kernels::create_step_buffer(dev);
  // With prefetch, any matrix will do as the next dispatch's weights: its reads change nothing.
  auto bound = k.bind(proj, gu, down, {&yb}, {&xb}, {&nb}, {&scratch}, {&step}, cfg.prefetch ? &gu : nullptr);
  double worst = 0;
  for (uint32_t s = 1; s <= steps; s++) {
    auto x = test::random_floats(b.hidden, seed + 10 * s, 2.0f);
    auto y = test::random_floats(b.proj_cols, seed + 10 * s + 1);
    dev.upload(xb, std::span<const float>(x));
    dev.upload(yb, std::span<const float>(y));
    kernels::upload_step(dev, step, kernels::StepParams{.decode_step = s});
    gpu::Recorder rec(dev);
    k.record(rec, bound);
    rec.submit();
    const double err = test::rel_l2(dev.download_as<float>(xb), reference_block(b, x, y, cfg.eps));
    worst = std::isnan(err) ? err : std::max(worst, err);  // a NaN must fail the caller's EXPECT_LT
  }
  if (status) *status = dev.download_as<uint32_t>(scratch, k.status_offset(), 1)[0];
  return worst;
}

}  // namespace

// One workgroup runs every tile of every stage: the tags are still checked (its own words).
TEST(ResidualMlpQ4, OneWorkgroupMatchesReference) {
  uint32_t seed = 700;
  for (auto [hidden, ffn, proj] : std::vector<std::array<uint32_t, 3>>{{64, 96, 64}, {96, 160, 64}, {256, 512, 128}}) {
    Block b = make_block(hidden, ffn, proj, seed);
    for (auto lanes : {8u, 32u}) {
      uint32_t status = 0;
      EXPECT_LT(run_steps(b, {.workgroups = 1, .workgroup_size = 64, .lanes = lanes}, 3, seed++, &status), 1e-5)
          << hidden << "x" << ffn << " lanes " << lanes;
      EXPECT_EQ(status, 0u);
    }
  }
}

// Workgroup-memory reductions instead of subgroups, lane groups narrower than lavapipe's subgroup.
TEST(ResidualMlpQ4, SharedReductionAndNarrowLanes) {
  Block b = make_block(128, 64, 96, 710);
  uint32_t status = 0;
  EXPECT_LT(run_steps(b, {.workgroups = 1, .workgroup_size = 32, .lanes = 4, .reduction = kernels::Reduction::shared}, 2, 711, &status), 1e-5);
  EXPECT_LT(run_steps(b, {.workgroups = 1, .workgroup_size = 64, .lanes = 2}, 2, 712, &status), 1e-5);
  EXPECT_EQ(status, 0u);
}

// Several workgroups: each stage waits for words the others write. lavapipe runs a dispatch's
// workgroups on one thread per core, so the grid stays within the cores.
TEST(ResidualMlpQ4, WorkgroupsWaitForEachOther) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (cores < 2) GTEST_SKIP() << "one core: a grid of several workgroups cannot be resident";
  Block b = make_block(256, 320, 256, 720);
  uint32_t status = 0;
  for (uint32_t slack : {0u, 1u, 2u}) {  // wait for both, for one, for none (the words alone)
    EXPECT_LT(run_steps(b, {.workgroups = 2, .workgroup_size = 64, .lanes = 16, .wait_slack = slack}, 4, 721, &status), 1e-5)
        << "slack " << slack;
    EXPECT_EQ(status, 0u) << "a wait gave up: the two workgroups did not run at once";
  }
  // One gate_up tile (32 rows of 32 a tile) for two workgroups: the second has down tiles but never
  // staged m, so it adds the residual back from the scratch words.
  Block narrow = make_block(256, 32, 256, 722);
  EXPECT_LT(run_steps(narrow, {.workgroups = 2, .workgroup_size = 256, .lanes = 8}, 3, 723, &status), 1e-5);
  EXPECT_EQ(status, 0u);
}

// Reading the next dispatch's weights ahead, from each stage: in the narrow block the second
// workgroup has no gate_up tile, so at stage 1 it reads ahead on the no-tile path.
TEST(ResidualMlpQ4, PrefetchKeepsTheResults) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (cores < 2) GTEST_SKIP() << "one core: a grid of several workgroups cannot be resident";
  Block narrow = make_block(256, 32, 256, 730);
  for (uint32_t stage = 0; stage < 3; stage++) {
    uint32_t status = 0;
    EXPECT_LT(run_steps(narrow, {.workgroups = 2, .workgroup_size = 256, .lanes = 8, .prefetch = true, .prefetch_stage = stage}, 2, 731 + stage, &status), 1e-5)
        << "prefetch from stage " << stage;
    EXPECT_EQ(status, 0u);
  }
  auto& kernels = test::test_kernels();
  kernels::ResidualMlpQ4 plain(kernels, {.hidden = 64, .ffn = 64, .proj_cols = 64, .workgroups = 1});
  kernels::ResidualMlpQ4 reading(kernels, {.hidden = 64, .ffn = 64, .proj_cols = 64, .workgroups = 1, .prefetch = true});
  Block b = make_block(64, 64, 64, 735);
  auto w = test::upload_q4_together({&b.proj, &b.gate_up, &b.down});
  const kernels::Q4Matrix &proj = w.matrices[0], &gu = w.matrices[1], &down = w.matrices[2];
  gpu::Buffer v = test::test_device().create_storage(64 * 4, "v");
  gpu::Buffer scratch = test::test_device().create_storage(plain.scratch_bytes(), "scratch");
  gpu::Buffer step = kernels::create_step_buffer(test::test_device());
  EXPECT_NO_THROW(plain.bind(proj, gu, down, {&v}, {&v}, {&v}, {&scratch}, {&step}));
  EXPECT_THROW(plain.bind(proj, gu, down, {&v}, {&v}, {&v}, {&scratch}, {&step}, &gu), Error);
  EXPECT_NO_THROW(reading.bind(proj, gu, down, {&v}, {&v}, {&v}, {&scratch}, {&step}));  // nothing to read ahead (the last layer)
  // Matrices in buffers of their own cannot be bound as one range.
  auto apart = test::upload_q4(b.down, "down apart");
  EXPECT_THROW(plain.bind(proj, gu, apart.matrix, {&v}, {&v}, {&v}, {&scratch}, {&step}), Error);
  EXPECT_THROW(kernels::ResidualMlpQ4(kernels, {.hidden = 64, .ffn = 64, .proj_cols = 64, .workgroups = 1, .prefetch = true, .prefetch_stage = 3}), Error);
}

TEST(ResidualMlpQ4, RejectsBadConfigs) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::ResidualMlpQ4(k, {.hidden = 48, .ffn = 64, .proj_cols = 64, .workgroups = 1}), Error);
  EXPECT_THROW(kernels::ResidualMlpQ4(k, {.hidden = 64, .ffn = 64, .proj_cols = 64, .workgroups = 0}), Error);
  EXPECT_THROW(kernels::ResidualMlpQ4(k, {.hidden = 64, .ffn = 64, .proj_cols = 64, .workgroups = 1, .lanes = 24}), Error);
  // 4096 cols at 8 lanes a row: 16 blocks a lane, above the 8 the kernel holds.
  EXPECT_THROW(kernels::ResidualMlpQ4(k, {.hidden = 64, .ffn = 4096, .proj_cols = 64, .workgroups = 1, .workgroup_size = 64, .lanes = 8}), Error);
}
