// `ember synth trellis-pipeline --small` -> `ember text-to-3d` end to end on the real binary (GLB
// validated structurally, PLY and PNG read back), `ember ss-decode` on a stage of it, and bad input:
// a clear message, a non-zero exit, and no output file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "mesh_check.h"
#include "trellis/pipeline_config.h"

namespace fs = std::filesystem;
using namespace ember;
using test::run_ember;

namespace {

class TextTo3DCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("ember_t23_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    auto r = run_ember("synth trellis-pipeline --small --seed 5 --out " + path("pipe"));
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::vector<uint8_t> bytes(const std::string& name) {
    std::string s = read_file(*dir_ / name);
    return {s.begin(), s.end()};
  }
  // A copy of the small pipeline with one slot of pipeline.json pointing elsewhere.
  static std::string variant(const std::string& name, const std::function<void(trellis::PipelineConfig&)>& edit) {
    const fs::path d = *dir_ / name;
    fs::create_directories(d);
    for (const char* s : {"text_encoder", "ss_flow", "ss_decoder"}) fs::create_directory_symlink(*dir_ / "pipe" / s, d / s);
    auto c = trellis::read_pipeline_config(*dir_ / "pipe");
    edit(c);
    write_file_atomic(d / trellis::kPipelineFile, trellis::pipeline_json(c));
    return d.string();
  }
  static fs::path* dir_;
};
fs::path* TextTo3DCli::dir_ = nullptr;

}  // namespace

TEST_F(TextTo3DCli, PipelineJsonHasTheReleasedSamplerDefaults) {
  auto c = trellis::read_pipeline_config(path("pipe"));
  EXPECT_EQ(c.sampler.steps, 25);
  EXPECT_EQ(c.sampler.cfg_strength, 7.5);
  EXPECT_EQ(c.sampler.cfg_lo, 0.5);
  EXPECT_EQ(c.sampler.cfg_hi, 1.0);
  EXPECT_EQ(c.sampler.rescale_t, 3.0);
}

TEST_F(TextTo3DCli, PromptToGlbPlyAndPreview) {
  auto r = run_ember("text-to-3d --prompt 'a small red chair' --stages " + path("pipe") + " --steps 3 --seed 2 --out " + path("a.glb") +
                     " --ply " + path("a.ply") + " --preview " + path("a.png") + " --preview-size 32");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the shape is noise"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step  3/3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ss-decoder"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total"), std::string::npos) << r.out;
  auto g = test::validate_glb(bytes("a.glb"));
  EXPECT_GT(g.indices.size(), 0u);
  EXPECT_EQ(test::closed_manifold_problem(g.indices), "");
  for (float p : g.positions) EXPECT_LE(std::fabs(p), 0.5f);
  std::string ply = read_file(*dir_ / "a.ply");
  EXPECT_EQ(ply.rfind("ply\nformat binary_little_endian 1.0\n", 0), 0u);
  std::string png = read_file(*dir_ / "a.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  // Deterministic: the same seed gives the same mesh.
  r = run_ember("text-to-3d --prompt 'a small red chair' --stages " + path("pipe") + " --steps 3 --seed 2 --out " + path("b.glb"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(bytes("a.glb"), bytes("b.glb"));
}

TEST_F(TextTo3DCli, SsDecodeOnThePipelinesDecoder) {
  std::vector<float> z(8 * 4 * 4 * 4, 0.5f);
  for (size_t i = 0; i < z.size(); i++) z[i] = float(int(i % 7) - 3) * 0.4f;
  formats::write_npy_f32(*dir_ / "z.npy", std::vector<int64_t>{8, 4, 4, 4}, z);
  auto r = run_ember("ss-decode --stage " + path("pipe/ss_decoder") + " --latent " + path("z.npy") + " --out " + path("l.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto a = formats::read_npy(*dir_ / "l.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 1, 16, 16, 16}));
  // A latent of the wrong channel count, an existing output, the wrong stage kind: errors, nothing written.
  formats::write_npy_f32(*dir_ / "z7.npy", std::vector<int64_t>{7, 4, 4, 4}, std::vector<float>(7 * 64, 0.f));
  r = run_ember("ss-decode --stage " + path("pipe/ss_decoder") + " --latent " + path("z7.npy") + " --out " + path("l7.npy"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("8 channels were expected"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(*dir_ / "l7.npy"));
  r = run_ember("ss-decode --stage " + path("pipe/ss_decoder") + " --latent " + path("z.npy") + " --out " + path("l.npy"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  r = run_ember("ss-decode --stage " + path("pipe/ss_flow") + " --latent " + path("z.npy") + " --out " + path("l8.npy"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("not sparseStructureDecoder"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(*dir_ / "l8.npy"));
}

TEST_F(TextTo3DCli, BadInputFailsBeforeWriting) {
  // Wrong stage kind in a slot.
  auto swapped = variant("swapped", [](trellis::PipelineConfig& c) { c.ss_decoder = "ss_flow"; });
  auto r = run_ember("text-to-3d --prompt x --stages " + swapped + " --steps 2 --out " + path("s.glb"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("holds a 'sparseStructureFlow' stage, not sparseStructureDecoder"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(*dir_ / "s.glb"));
  // Mismatched channels: a decoder taking 4-channel latents after an 8-channel flow.
  const fs::path cfg = *dir_ / "dec4.json";
  write_file_atomic(cfg, std::string(R"({"name": "SparseStructureDecoder", "args": {"latent_channels": 4, "num_res_blocks": 1,
      "num_res_blocks_middle": 1, "channels": [16, 8]}})"));
  r = run_ember("synth trellis-ss-decoder --config " + cfg.string() + " --seed 1 --out " + path("dec4.safetensors"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_ember("pack trellis --quiet --stage ss-decoder --from " + path("dec4.safetensors") + " --out " + path("dec4"));
  ASSERT_EQ(r.status, 0) << r.out;
  auto mismatched = variant("mismatched", [](trellis::PipelineConfig& c) { c.ss_decoder = "dec4"; });
  fs::create_directory_symlink(*dir_ / "dec4", fs::path(mismatched) / "dec4");
  r = run_ember("text-to-3d --prompt x --stages " + mismatched + " --steps 2 --out " + path("m.glb"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("latents of 8 channels, the decoder takes 4"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(*dir_ / "m.glb"));
  // An output directory that does not exist, and an existing output: refused before any work.
  r = run_ember("text-to-3d --prompt x --stages " + path("pipe") + " --steps 2 --out " + path("a.glb.d/x.glb"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  std::ofstream(*dir_ / "taken.png") << "not ember's";
  r = run_ember("text-to-3d --prompt x --stages " + path("pipe") + " --steps 2 --out " + path("t.glb") + " --preview " + path("taken.png"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(*dir_ / "t.glb"));
  EXPECT_EQ(read_file(*dir_ / "taken.png"), "not ember's");
}
