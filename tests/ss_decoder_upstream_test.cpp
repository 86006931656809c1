// The sparse-structure decoder against TRELLIS's own SparseStructureDecoder: the committed fixture
// (tools/golden/make_ss_decoder_goldens.py: upstream's class at a small config, its re-drawn
// weights, a latent, and upstream's logits computed on the weights `ember dequant` gives back
// for `ember pack trellis` of them) packed and decoded by the `ember` binary on lavapipe; and the
// released config's state-dict names as upstream's class lists them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "formats/ss_decoder_config.h"
#include "gpu_fixture.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kFixture = fs::path(EMBER_SOURCE_DIR) / "tests/fixtures/upstream/ss_decoder_small";

}  // namespace

TEST(SsDecoderUpstream, ReleasedStateDictNamesAndShapes) {
  auto j = nlohmann::json::parse(read_file(kFixture / "released_state_dict.json"));
  std::map<std::string, std::vector<int64_t>> upstream;
  for (const auto& [name, shape] : j.items()) upstream[name] = shape.get<std::vector<int64_t>>();
  EXPECT_EQ(upstream, formats::ss_decoder_tensor_shapes(formats::ss_decoder_released_config()));
}

TEST(SsDecoderUpstream, PackedFixtureDecodesLikeUpstream) {
  const fs::path dir = fs::temp_directory_path() / ("ember_ssd_upstream_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto r = test::run_ember("pack trellis --quiet --stage ss-decoder --from " + (kFixture / "weights.safetensors").string() +
                           " --config " + (kFixture / "config.json").string() + " --out " + (dir / "stage").string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = test::run_ember("ss-decode --stage " + (dir / "stage").string() + " --latent " + (kFixture / "latent.npy").string() +
                      " --out " + (dir / "logits.npy").string());
  ASSERT_EQ(r.status, 0) << r.out;
  auto got = formats::read_npy(dir / "logits.npy");
  auto want = formats::read_npy(kFixture / "logits.npy");
  ASSERT_EQ(got.shape, want.shape);
  auto g = got.to_f32(), w = want.to_f32();
  EXPECT_LE(test::rel_l2(g, w), 1e-3);
  size_t both = 0, either = 0;
  for (size_t i = 0; i < g.size(); i++) {
    both += g[i] > 0 && w[i] > 0;
    either += g[i] > 0 || w[i] > 0;
  }
  ASSERT_GT(either, g.size() / 10);  // the fixture has a real mix of both signs
  EXPECT_GE(double(both) / double(either), 0.999);
  fs::remove_all(dir);
}
