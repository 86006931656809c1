// `ember tune --stage` end to end on a tiny packed stage: a short budget writes this GPU's entry of
// the stage's candidate file, which `ember ss-flow-forward` and `ember bench ss-flow` then run;
// the forward under it stays near the CPU reference; bad input is refused and leaves no file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "gpu_fixture.h"
#include "reference/ss_flow_reference.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"

namespace fs = std::filesystem;
using namespace ember;
using test::run_ember;

TEST(SsFlowTuneCli, ShortBudgetTuneWritesACandidateTheCommandsRun) {
  const fs::path dir = fs::temp_directory_path() / ("ember_ss_flow_tune_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stage = (dir / "stage").string(), file = (dir / "stage" / trellis::kSsFlowCandidateFile).string();
  auto r = run_ember("synth trellis-ss-flow --tiny --seed 4 --out " + (dir / "ckpt.safetensors").string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_ember("pack trellis --quiet --stage ss-flow --from " + (dir / "ckpt.safetensors").string() + " --out " + stage);
  ASSERT_EQ(r.status, 0) << r.out;

  // Bad input first: nothing written.
  r = run_ember("tune --stage " + stage + " --model " + stage);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("exactly one of --model DIR and --stage DIR"), std::string::npos) << r.out;
  r = run_ember("tune --stage " + stage + " --budget 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--budget"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(file));

  r = run_ember("tune --stage " + stage + " --budget 600 --max-choices 2 --repeats 1 --json --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["checked"].get<int>() + j["rejected"].get<int>() + j["failed"].get<int>(), 2) << r.out;
  EXPECT_GE(j["checked"].get<int>(), 1) << r.out;
  EXPECT_EQ(j["out"], file);
  ASSERT_TRUE(fs::exists(file));
  const auto cand = trellis::load_ss_flow_candidate(dir / "stage", test::test_device().adapter());
  ASSERT_TRUE(cand.has_value()) << read_file(file);
  EXPECT_EQ(cand->tuned["checked"], j["checked"]);
  EXPECT_EQ(trellis::options_to_json(cand->options), j["best"]);

  // The forward under the candidate against the CPU reference on the stage's dequantized weights.
  auto pack = trellis::open_ss_flow_stage(dir / "stage");
  const auto config = trellis::ss_flow_config_of(*pack);
  reference::Weights w;
  for (const auto& [name, t] : pack->pack().manifest().tensors) w[name] = pack->pack().dequantize(name);
  const int64_t ctx = 77;
  auto x = test::random_floats(size_t(config.in_channels * config.tokens()), 81);
  auto c = test::random_floats(size_t(ctx * config.cond_channels), 82);
  formats::write_npy_f32(dir / "x.npy", std::vector<int64_t>{config.in_channels, config.resolution, config.resolution, config.resolution}, x);
  formats::write_npy_f32(dir / "c.npy", std::vector<int64_t>{ctx, config.cond_channels}, c);
  r = run_ember("ss-flow-forward --stage " + stage + " --x " + (dir / "x.npy").string() + " --t 0.6 --cond " + (dir / "c.npy").string() +
                " --out " + (dir / "v.npy").string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto ref = reference::ss_flow_forward(config, w, x, {0.6}, c, ctx);
  EXPECT_LT(test::rel_l2(formats::read_npy(dir / "v.npy").to_f32(), ref), cand->options.int8 ? 3e-2 : 1e-3);

  // The bench runs it and says so; a tuning option beside it needs --no-candidate.
  r = run_ember("bench ss-flow --stage " + stage + " --repeats 1 --no-sample");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("options: candidate " + file), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ceilings: f32 FMA"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("self_attn.flash"), std::string::npos) << r.out;
  r = run_ember("bench ss-flow --stage " + stage + " --repeats 1 --no-sample --mlp2-splits 3");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--no-candidate"), std::string::npos) << r.out;
  r = run_ember("bench ss-flow --stage " + stage + " --repeats 1 --no-sample --mlp2-splits 3 --no-candidate");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("options: command line"), std::string::npos) << r.out;

  // A broken candidate is an error naming the file, never ignored; a file of something else in
  // the way is not overwritten by the tuner.
  write_file_atomic(file, "{\"format\": \"ember-ss-flow-candidates\", \"version\": 1, \"devices\": {\"x\": {\"options\": {\"int9\": 1}}}}");
  r = run_ember("ss-flow-forward --stage " + stage + " --x " + (dir / "x.npy").string() + " --t 0.6 --cond " + (dir / "c.npy").string() +
                " --out " + (dir / "v2.npy").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("int9"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "v2.npy"));
  write_file_atomic(file, "{\"format\": \"mine\"}");
  r = run_ember("tune --stage " + stage + " --budget 1 --quiet");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(read_file(file), "{\"format\": \"mine\"}");
  fs::remove_all(dir);
}
