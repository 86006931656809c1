// embed_q4.wgsl against the dequantized reference rows, ids read from a GPU buffer.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/embed_q4.h"
#include "q4_gpu.h"

using namespace ember;

namespace {

std::vector<float> run_embed(const reference::Q4Host& host, const std::vector<uint32_t>& ids, uint32_t wg) {
  auto& dev = test::test_device();
  auto w = test::upload_q4(host);
  gpu::Buffer idb = dev.create_storage(ids.size() * 4, "ids");
  dev.upload(idb, std::span<const uint32_t>(ids));
  gpu::Buffer out = test::upload_floats(std::vector<float>(ids.size() * host.cols, test::kPoison), "out");
  kernels::EmbedQ4 embed(test::test_kernels(),
                         {.rows = host.rows, .cols = host.cols, .asymmetric = host.asymmetric(), .workgroup_size = wg});
  auto bound = embed.bind(w.matrix, {&idb}, {&out}, static_cast<uint32_t>(ids.size()));
  gpu::Recorder rec(dev);
  embed.record(rec, bound);
  rec.submit();
  return dev.download_as<float>(out);
}

std::vector<float> reference_rows(const reference::Q4Host& host, const std::vector<uint32_t>& ids) {
  auto d = reference::dequantize_q4(host);
  std::vector<float> out;
  for (uint32_t id : ids) {
    if (id < host.rows) out.insert(out.end(), d.begin() + size_t(id) * host.cols, d.begin() + size_t(id + 1) * host.cols);
    else out.insert(out.end(), host.cols, 0.0f);
  }
  return out;
}

}  // namespace

TEST(EmbedQ4, AsymmetricRowsMatchReference) {
  uint32_t seed = 200;
  for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {7, 96}, {1000, 320}, {100, 1024}})
    for (uint32_t wg : {32u, 128u}) {
      auto host = reference::quantize_q4_asymmetric(test::random_floats(size_t(rows) * cols, seed++), rows, cols);
      std::vector<uint32_t> ids{0, rows - 1, rows / 2, 0, rows / 3};  // repeats are fine
      EXPECT_LT(test::rel_l2(run_embed(host, ids, wg), reference_rows(host, ids)), test::kF32Tolerance)
          << rows << "x" << cols << " wg " << wg;
    }
}

TEST(EmbedQ4, SymmetricMatrixAndOutOfRangeIds) {
  auto host = reference::quantize_q4_symmetric(test::random_floats(33 * 64, 5), 33, 64);
  std::vector<uint32_t> ids{32, 33, 7, 0xFFFFFFFFu};  // two invalid ids give zero rows
  EXPECT_LT(test::rel_l2(run_embed(host, ids, 64), reference_rows(host, ids)), test::kF32Tolerance);
}

TEST(EmbedQ4, RejectsMismatchedBindings) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::EmbedQ4(k, {.rows = 4, .cols = 20}), Error);
  kernels::EmbedQ4 embed(k, {.rows = 4, .cols = 64});
  auto sym = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(4 * 64, 1), 4, 64));
  auto asym = test::upload_q4(reference::quantize_q4_asymmetric(test::random_floats(4 * 64, 1), 4, 64));
  gpu::Buffer ids = test::test_device().create_storage(16, "ids");
  gpu::Buffer out = test::upload_floats(std::vector<float>(64 * 4), "out");
  EXPECT_NO_THROW(embed.bind(asym.matrix, {&ids}, {&out}, 4));
  EXPECT_THROW(embed.bind(sym.matrix, {&ids}, {&out}, 4), Error);
  EXPECT_THROW(embed.bind(asym.matrix, {&ids}, {&out}, 5), Error);
}
