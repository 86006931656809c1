// The ss-flow commands end to end on a real stage pack (`ember synth trellis-ss-flow --tiny` ->
// `ember pack trellis` -> `ember ss-flow` / `ss-flow-forward`) against the CPU reference; the
// files they write read back by numpy; and bad input: a clear message, a non-zero exit, no output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <limits>

#include "cli_util.h"
#include "numpy_util.h"
#include "common/atomic_file.h"
#include "formats/npy.h"
#include "formats/trellis_pack.h"
#include "gpu_fixture.h"
#include "reference/ss_flow_reference.h"
#include "trellis/flow_sampler.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_stage.h"

namespace fs = std::filesystem;
using namespace ember;
using test::run_ember;

namespace {

constexpr int64_t kCtx = 77;

std::vector<float> load(const fs::path& p, std::vector<int64_t>* shape = nullptr) {
  formats::NpyArray a = formats::read_npy(p);
  if (shape) *shape = a.shape;
  return a.to_f32();
}

// One tiny stage, packed through the CLI, shared by the tests of this file.
class SsFlowStageCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("ember_ss_flow_cli_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    auto r = run_ember("synth trellis-ss-flow --tiny --seed 3 --out " + path("ckpt.safetensors"));
    ASSERT_EQ(r.status, 0) << r.out;
    r = run_ember("pack trellis --quiet --stage ss-flow --from " + path("ckpt.safetensors") + " --out " + path("stage"));
    ASSERT_EQ(r.status, 0) << r.out;
    pack_ = new std::unique_ptr<trellis::PackTensors>(trellis::open_ss_flow_stage(*dir_ / "stage"));
    config_ = new formats::SsFlowConfig(trellis::ss_flow_config_of(**pack_));
    weights_ = new reference::Weights;
    for (const auto& [name, t] : (*pack_)->pack().manifest().tensors) (*weights_)[name] = (*pack_)->pack().dequantize(name);
    const size_t ctx_n = size_t(kCtx * config_->cond_channels);
    cond_ = new std::vector<float>(test::random_floats(ctx_n, 31));
    neg_ = new std::vector<float>(test::random_floats(ctx_n, 32));
    formats::write_npy_f32(*dir_ / "cond.npy", std::vector<int64_t>{kCtx, config_->cond_channels}, *cond_);
    formats::write_npy_f16(*dir_ / "neg.npy", std::vector<int64_t>{1, kCtx, config_->cond_channels}, *neg_);
    *neg_ = load(*dir_ / "neg.npy");  // what the f16 file holds
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete pack_;
    delete config_;
    delete weights_;
    delete cond_;
    delete neg_;
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string stage() { return " --stage " + path("stage"); }
  static std::string contexts() { return " --cond " + path("cond.npy") + " --neg-cond " + path("neg.npy"); }
  int64_t latent_n() const { return config_->in_channels * config_->tokens(); }
  std::vector<int64_t> latent_shape() const {
    const int64_t R = config_->resolution;
    return {config_->in_channels, R, R, R};
  }
  // What `ember ss-flow` writes for B latents: the batch axis always, as upstream's sample().
  std::vector<int64_t> batch_shape(int64_t B) const {
    auto s = latent_shape();
    s.insert(s.begin(), B);
    return s;
  }
  // A run that must fail with `needle` in its message and leave `out` unwritten.
  void expect_error(const std::string& args, const std::string& needle, const std::string& out = "out.npy") {
    fs::remove(path(out));
    auto r = run_ember(args);
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.out;
    EXPECT_FALSE(fs::exists(path(out))) << args;
  }

  static fs::path* dir_;
  static std::unique_ptr<trellis::PackTensors>* pack_;
  static formats::SsFlowConfig* config_;
  static reference::Weights* weights_;
  static std::vector<float>*cond_, *neg_;
};
fs::path* SsFlowStageCli::dir_ = nullptr;
std::unique_ptr<trellis::PackTensors>* SsFlowStageCli::pack_ = nullptr;
formats::SsFlowConfig* SsFlowStageCli::config_ = nullptr;
reference::Weights* SsFlowStageCli::weights_ = nullptr;
std::vector<float>* SsFlowStageCli::cond_ = nullptr;
std::vector<float>* SsFlowStageCli::neg_ = nullptr;

}  // namespace

TEST_F(SsFlowStageCli, PackedStageForwardMatchesReferenceOnItsDequantizedWeights) {
  // The engine on the StagePack adapter (shards mapped, sha256 verified) against the reference on
  // StagePack::dequantize: the same numbers reach the GPU as the packer wrote.
  EXPECT_EQ(config_->tokens(), 64);
  EXPECT_EQ(config_->model_channels, 128);
  trellis::SsFlowModel model(test::test_kernels(), **pack_);
  model.set_context(*cond_, *neg_, kCtx);
  auto x = test::random_floats(size_t(2 * latent_n()), 41);
  std::vector<float> both = *cond_;
  both.insert(both.end(), neg_->begin(), neg_->end());
  auto ref = reference::ss_flow_forward(*config_, *weights_, x, {0.77, 0.21}, both, kCtx);
  auto got = model.forward(x, {0.77, 0.21});
  EXPECT_LT(test::rel_l2(got, ref), 1e-3);
}

TEST_F(SsFlowStageCli, SampleMatchesReferenceSampler) {
  auto r = run_ember("ss-flow" + stage() + contexts() + " --steps 3 --cfg-interval 0.5,1.0 --seed 5 --out " + path("lat.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("3 steps"), std::string::npos) << r.out;
  std::vector<int64_t> shape;
  auto got = load(path("lat.npy"), &shape);
  EXPECT_EQ(shape, batch_shape(1));
  trellis::SamplerOptions o;
  o.steps = 3;
  auto noise = trellis::gaussian_noise(5, size_t(latent_n()));
  auto ref = reference::flow_sample(*config_, *weights_, noise, *cond_, *neg_, kCtx, o);
  EXPECT_LT(test::rel_l2(got, ref), 1e-3);
}

TEST_F(SsFlowStageCli, NoiseFileOfTheSeededNoiseGivesTheSameLatent) {
  formats::write_npy_f32(path("noise.npy"), latent_shape(), trellis::gaussian_noise(9, size_t(latent_n())));
  auto r = run_ember("ss-flow" + stage() + contexts() + " --steps 2 --seed 9 --out " + path("seeded.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  // --noise wins over --seed.
  r = run_ember("ss-flow" + stage() + contexts() + " --steps 2 --seed 1 --noise " + path("noise.npy") + " --out " +
                path("from_file.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_file(path("seeded.npy")), read_file(path("from_file.npy")));
  r = run_ember("ss-flow" + stage() + contexts() + " --steps 2 --seed 10 --out " + path("other.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(read_file(path("seeded.npy")), read_file(path("other.npy")));
}

TEST_F(SsFlowStageCli, DumpedVelocitiesAreTheSamplersSteps) {
  const int steps = 4;
  auto r = run_ember("ss-flow" + stage() + contexts() + " --steps 4 --cfg-interval 0.6,1.0 --seed 6 --dump-velocity " +
                     path("v.npy") + " --out " + path("lat_dumped.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> shape;
  auto v = load(path("v.npy"), &shape);
  std::vector<int64_t> want = batch_shape(1);
  want.insert(want.begin(), steps);
  ASSERT_EQ(shape, want);
  const auto x_final = load(path("lat_dumped.npy"));
  // docs/models.md's Euler update: x_{i+1} = x_i - (t_i - t_{i+1}) v_i, from the seeded noise.
  trellis::SamplerOptions o;
  o.steps = steps;
  o.cfg_lo = 0.6;
  const auto ts = trellis::flow_schedule(steps, o.rescale_t);
  const size_t n = size_t(latent_n());
  std::vector<float> x = trellis::gaussian_noise(6, n);
  for (int i = 0; i < steps; i++)
    for (size_t k = 0; k < n; k++) x[k] = float(x[k] - (ts[size_t(i)] - ts[size_t(i + 1)]) * v[size_t(i) * n + k]);
  EXPECT_LT(test::rel_l2(x, x_final), 1e-6) << "the last step is x_prev - dt * v_last";
  // And each step's velocity (guided on steps 0..2 here, t = 1, .9, .75; not on t = .5) is the
  // reference sampler's.
  std::vector<float> ref_v;
  reference::flow_sample(*config_, *weights_, trellis::gaussian_noise(6, n), *cond_, *neg_, kCtx, o, &ref_v);
  ASSERT_EQ(ref_v.size(), v.size());
  for (int i = 0; i < steps; i++) {
    std::vector<float> a(v.begin() + std::ptrdiff_t(i * n), v.begin() + std::ptrdiff_t((i + 1) * n));
    std::vector<float> b(ref_v.begin() + std::ptrdiff_t(i * n), ref_v.begin() + std::ptrdiff_t((i + 1) * n));
    EXPECT_LT(test::rel_l2(a, b), 1e-3) << "step " << i;
  }
}

namespace {
std::vector<float> slice(const std::vector<float>& v, size_t index, size_t n) {
  return std::vector<float>(v.begin() + std::ptrdiff_t(index * n), v.begin() + std::ptrdiff_t((index + 1) * n));
}
}  // namespace

TEST_F(SsFlowStageCli, BatchOfTwoMatchesReferenceSampler) {
  // Two prompts ([2, 77, C]) and one negative context ([1, 77, C], repeated over the batch as
  // upstream does), seeded noise for both: the latents and every step's velocities of the
  // reference sampler run at batch 2.
  const size_t n = size_t(latent_n());
  std::vector<float> cond2 = *cond_, other = test::random_floats(cond_->size(), 33);
  cond2.insert(cond2.end(), other.begin(), other.end());
  formats::write_npy_f32(path("cond2.npy"), std::vector<int64_t>{2, kCtx, config_->cond_channels}, cond2);
  auto r = run_ember("ss-flow" + stage() + " --cond " + path("cond2.npy") + " --neg-cond " + path("neg.npy") +
                     " --steps 3 --seed 8 --dump-velocity " + path("v2.npy") + " --out " + path("lat2.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2 latent(s), 6 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sample 2/2"), std::string::npos) << r.out;
  std::vector<int64_t> shape;
  const auto got = load(path("lat2.npy"), &shape);
  ASSERT_EQ(shape, batch_shape(2));
  const auto v = load(path("v2.npy"), &shape);
  std::vector<int64_t> vshape = batch_shape(2);
  vshape.insert(vshape.begin(), 3);
  ASSERT_EQ(shape, vshape);
  trellis::SamplerOptions o;
  o.steps = 3;
  std::vector<float> ref_v;
  const auto ref = reference::flow_sample(*config_, *weights_, trellis::gaussian_noise(8, 2 * n), cond2, *neg_, kCtx, o, &ref_v);
  ASSERT_EQ(ref_v.size(), v.size());
  for (size_t b = 0; b < 2; b++) EXPECT_LT(test::rel_l2(slice(got, b, n), slice(ref, b, n)), 1e-3) << "sample " << b;
  for (size_t k = 0; k < 6; k++)
    EXPECT_LT(test::rel_l2(slice(v, k, n), slice(ref_v, k, n)), 1e-3) << "step " << k / 2 << ", sample " << k % 2;
  EXPECT_GT(test::rel_l2(slice(got, 0, n), slice(got, 1, n)), 1e-2) << "two prompts, two noises: two latents";
}

TEST_F(SsFlowStageCli, SamplesDrawsDeterministicLatents) {
  // --seed S --samples N draws N latents from one noise stream: the first is the one --seed S
  // alone draws, the same command writes the same file, and a noise file of those N latents
  // gives the same result (one [77, C] context for all of them).
  const size_t n = size_t(latent_n());
  const std::string base = "ss-flow" + stage() + contexts() + " --steps 2 --seed 12";
  auto r = run_ember(base + " --out " + path("one.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_ember(base + " --samples 3 --out " + path("three.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("sample 3/3"), std::string::npos) << r.out;
  r = run_ember(base + " --samples 3 --out " + path("three_again.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_file(path("three.npy")), read_file(path("three_again.npy")));
  std::vector<int64_t> shape;
  const auto one = load(path("one.npy"), &shape);
  EXPECT_EQ(shape, batch_shape(1));
  const auto three = load(path("three.npy"), &shape);
  ASSERT_EQ(shape, batch_shape(3));
  EXPECT_EQ(slice(three, 0, n), one);
  EXPECT_NE(slice(three, 1, n), slice(three, 0, n));
  EXPECT_NE(slice(three, 2, n), slice(three, 1, n));
  formats::write_npy_f32(path("noise3.npy"), batch_shape(3), trellis::gaussian_noise(12, 3 * n));
  r = run_ember("ss-flow" + stage() + contexts() + " --steps 2 --seed 99 --noise " + path("noise3.npy") + " --out " +
                path("three_file.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_file(path("three.npy")), read_file(path("three_file.npy")));
}

TEST_F(SsFlowStageCli, BadBatches) {
  // Batch sizes that disagree, or shapes that are no batch: an error naming the option before
  // any weights are made, no output.
  const int64_t C = config_->cond_channels;
  formats::write_npy_f32(path("c3.npy"), std::vector<int64_t>{3, kCtx, C}, test::random_floats(size_t(3 * kCtx * C), 34));
  formats::write_npy_f32(path("c2.npy"), std::vector<int64_t>{2, kCtx, C}, test::random_floats(size_t(2 * kCtx * C), 35));
  formats::write_npy_f32(path("c2short.npy"), std::vector<int64_t>{2, kCtx - 1, C}, std::vector<float>(size_t(2 * (kCtx - 1) * C)));
  formats::write_npy_f32(path("n2.npy"), batch_shape(2), test::random_floats(size_t(2 * latent_n()), 36));
  formats::write_npy_f32(path("n2flat.npy"), std::vector<int64_t>{2, 8, 4, 4}, std::vector<float>(2 * 8 * 16));
  formats::write_npy_f32(path("n0.npy"), batch_shape(0), std::vector<float>());
  auto run_with = [&](const std::string& cond, const std::string& neg, const std::string& extra) {
    return "ss-flow" + stage() + " --cond " + path(cond) + " --neg-cond " + path(neg) + " --steps 1 " + extra + " --out " + path("out.npy");
  };
  expect_error(run_with("c3.npy", "neg.npy", "--samples 2"), "a batch of 3 contexts for 2 latent(s)");
  expect_error(run_with("c3.npy", "c2.npy", ""), "--neg-cond " + path("c2.npy") + ": a batch of 2 contexts for 3 latent(s)");
  expect_error(run_with("c3.npy", "neg.npy", "--noise " + path("n2.npy")), "a batch of 3 contexts for 2 latent(s)");
  expect_error(run_with("cond.npy", "neg.npy", "--samples 3 --noise " + path("n2.npy")), "--samples 3 but the noise holds 2 latent(s)");
  expect_error(run_with("cond.npy", "neg.npy", "--noise " + path("n2flat.npy")), "shape (2, 8, 4, 4) is neither (8, 4, 4, 4) nor a batch");
  expect_error(run_with("cond.npy", "neg.npy", "--noise " + path("n0.npy")), "shape (0, 8, 4, 4, 4) is neither");
  expect_error(run_with("c2short.npy", "neg.npy", ""), "shape (2, 76, " + std::to_string(C) + ") is neither (77, ");
  expect_error(run_with("cond.npy", "neg.npy", "--samples -1"), "--samples -1 is negative");
}

TEST_F(SsFlowStageCli, ForwardMatchesReference) {
  const size_t n = size_t(latent_n()), ctx_n = cond_->size();
  // Batch 3 (the engine runs it as 2 + 1), one context per row, one time per row.
  auto x = test::random_floats(3 * n, 51);
  std::vector<float> ctx = test::random_floats(3 * ctx_n, 52);
  std::vector<int64_t> xs = latent_shape();
  xs.insert(xs.begin(), 3);
  formats::write_npy_f32(path("x3.npy"), xs, x);
  formats::write_npy_f32(path("c3.npy"), std::vector<int64_t>{3, kCtx, config_->cond_channels}, ctx);
  auto r = run_ember("ss-flow-forward" + stage() + " --x " + path("x3.npy") + " --t 0.9,0.4,0.05 --cond " + path("c3.npy") +
                     " --out " + path("v3.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> shape;
  auto got = load(path("v3.npy"), &shape);
  EXPECT_EQ(shape, xs);
  auto ref = reference::ss_flow_forward(*config_, *weights_, x, {0.9, 0.4, 0.05}, ctx, kCtx);
  EXPECT_LT(test::rel_l2(got, ref), 1e-3);
  // Batch 1 without the batch axis, a [77, C] context, one time.
  std::vector<float> x1(x.begin(), x.begin() + std::ptrdiff_t(n));
  formats::write_npy_f32(path("x1.npy"), latent_shape(), x1);
  r = run_ember("ss-flow-forward" + stage() + " --x " + path("x1.npy") + " --t 0.3 --cond " + path("cond.npy") + " --out " +
                path("v1.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  got = load(path("v1.npy"), &shape);
  EXPECT_EQ(shape, latent_shape());
  EXPECT_LT(test::rel_l2(got, reference::ss_flow_forward(*config_, *weights_, x1, {0.3}, *cond_, kCtx)), 1e-3);
}

TEST_F(SsFlowStageCli, NumpyReadsWhatTheCommandsWrite) {
  const std::string python = test::numpy_python();
  if (python.empty()) GTEST_SKIP() << "numpy is not installed for python3 or /usr/bin/python3: cannot check np.load";
  auto r = run_ember("ss-flow" + stage() + contexts() + " --steps 2 --dump-velocity " + path("nv.npy") + " --out " +
                     path("nl.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> xs = latent_shape();
  xs.insert(xs.begin(), 2);
  formats::write_npy_f32(path("nx.npy"), xs, test::random_floats(size_t(2 * latent_n()), 61));
  r = run_ember("ss-flow-forward" + stage() + " --x " + path("nx.npy") + " --t 0.5 --cond " + path("cond.npy") + " --out " +
                path("nf.npy"));
  ASSERT_EQ(r.status, 0) << r.out;
  write_file_atomic(path("check.py"),
                    "import numpy as np, sys\n"
                    "d = sys.argv[1]\n"
                    "for name, shape in (('nl', (1, 8, 4, 4, 4)), ('nv', (2, 1, 8, 4, 4, 4)), ('nf', (2, 8, 4, 4, 4))):\n"
                    "    a = np.load(d + '/' + name + '.npy')\n"
                    "    assert a.dtype == np.float32 and a.shape == shape, (name, a.dtype, a.shape)\n"
                    "    assert np.isfinite(a).all() and np.abs(a).sum() > 0, name\n");
  EXPECT_EQ(std::system((python + " " + path("check.py") + " " + dir_->string()).c_str()), 0);
}

TEST_F(SsFlowStageCli, BadSamplerOptions) {
  const std::string base = "ss-flow --synthetic" + contexts() + " --out " + path("out.npy");
  expect_error(base + " --steps 0", "--steps");
  expect_error(base + " --cfg-interval 0.9,0.5", "reversed");
  expect_error(base + " --cfg-interval 0.5,1.5", "within [0, 1]");
  expect_error(base + " --cfg-interval half", "not LO,HI");
}

TEST_F(SsFlowStageCli, BadContexts) {
  const std::string C = std::to_string(config_->cond_channels);
  auto run_with = [&](const std::string& cond) { return "ss-flow" + stage() + " --cond " + path(cond) + " --neg-cond " + path("cond.npy") + " --out " + path("out.npy"); };
  formats::write_npy_f32(path("short.npy"), std::vector<int64_t>{76, config_->cond_channels},
                         std::vector<float>(size_t(76 * config_->cond_channels)));
  expect_error(run_with("short.npy"), "shape (76, " + C + ") is neither (77, " + C + ") nor a batch of them");
  // A float64 array, written by hand.
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (77, " + C + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += char(1);
  bytes += char(0);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  bytes += header + std::string(size_t(77 * config_->cond_channels * 8), '\0');
  write_file_atomic(path("f64.npy"), bytes);
  expect_error(run_with("f64.npy"), "dtype '<f8'");
  std::vector<float> v(size_t(77 * config_->cond_channels), 0.0f);
  v[1234] = std::numeric_limits<float>::quiet_NaN();
  formats::write_npy_f32(path("nan.npy"), std::vector<int64_t>{77, config_->cond_channels}, v);
  expect_error(run_with("nan.npy"), "non-finite value");
  v[1234] = std::numeric_limits<float>::infinity();
  formats::write_npy_f32(path("inf.npy"), std::vector<int64_t>{1, 77, config_->cond_channels}, v);
  expect_error(run_with("inf.npy"), "at element 1234");
  expect_error(run_with("absent.npy"), "absent.npy");
}

TEST_F(SsFlowStageCli, BadNoise) {
  const std::string base = "ss-flow" + stage() + contexts() + " --out " + path("out.npy") + " --noise ";
  formats::write_npy_f32(path("noise_small.npy"), std::vector<int64_t>{8, 4, 4, 3}, std::vector<float>(8 * 4 * 4 * 3));
  expect_error(base + path("noise_small.npy"), "shape (8, 4, 4, 3) is neither (8, 4, 4, 4) nor a batch of them");
  std::vector<float> v(size_t(latent_n()), 0.5f);
  v[7] = std::numeric_limits<float>::quiet_NaN();
  formats::write_npy_f32(path("noise_nan.npy"), latent_shape(), v);
  expect_error(base + path("noise_nan.npy"), "non-finite value");
  expect_error(base + path("no_noise.npy"), "no_noise.npy");
  // An output that cannot be written is found before the run, so no other output is left behind.
  expect_error("ss-flow" + stage() + contexts() + " --out " + path("out.npy") + " --dump-velocity " + path("nodir/v.npy"),
               "does not exist");
  expect_error("ss-flow" + stage() + contexts() + " --out " + path("nodir/out.npy"), "does not exist");
}

TEST_F(SsFlowStageCli, BadForwardInput) {
  const std::string C = std::to_string(config_->cond_channels);
  std::vector<int64_t> xs = latent_shape();
  xs.insert(xs.begin(), 2);
  formats::write_npy_f32(path("fx2.npy"), xs, test::random_floats(size_t(2 * latent_n()), 71));
  auto fwd = [&](const std::string& x, const std::string& t, const std::string& cond) {
    return "ss-flow-forward" + stage() + " --x " + path(x) + " --t " + t + " --cond " + path(cond) + " --out " + path("out.npy");
  };
  // Latents of the wrong shape.
  formats::write_npy_f32(path("fx_bad.npy"), std::vector<int64_t>{2, 8, 4, 4}, std::vector<float>(2 * 8 * 16));
  expect_error(fwd("fx_bad.npy", "0.5", "cond.npy"), "is not a batch of latents (8, 4, 4, 4)");
  // Context batch that does not match, and of the wrong width.
  formats::write_npy_f32(path("fc3.npy"), std::vector<int64_t>{3, 77, config_->cond_channels},
                         std::vector<float>(size_t(3 * 77 * config_->cond_channels)));
  expect_error(fwd("fx2.npy", "0.5", "fc3.npy"), "does not fit 2 latent(s)");
  formats::write_npy_f32(path("fc_wide.npy"), std::vector<int64_t>{77, 768}, std::vector<float>(77 * 768));
  expect_error(fwd("fx2.npy", "0.5", "fc_wide.npy"), C + " context channels");
  // Times: count and syntax.
  expect_error(fwd("fx2.npy", "0.1,0.2,0.3", "cond.npy"), "3 times for 2 latents");
  expect_error(fwd("fx2.npy", "soon", "cond.npy"), "'soon' is not a finite number");
  expect_error(fwd("fx2.npy", "nan", "cond.npy"), "is not a finite number");
  // NaN in x, missing files, no stage.
  auto bad = test::random_floats(size_t(2 * latent_n()), 72);
  bad[100] = std::numeric_limits<float>::infinity();
  formats::write_npy_f32(path("fx_inf.npy"), xs, bad);
  expect_error(fwd("fx_inf.npy", "0.5", "cond.npy"), "non-finite value");
  expect_error(fwd("missing_x.npy", "0.5", "cond.npy"), "missing_x.npy");
  expect_error(fwd("fx2.npy", "0.5", "missing_c.npy"), "missing_c.npy");
  expect_error("ss-flow-forward" + stage() + " --x " + path("fx2.npy") + " --t 0.5 --cond " + path("cond.npy") + " --out " +
                   path("nodir/v.npy"),
               "does not exist");
  expect_error("ss-flow-forward --x " + path("fx2.npy") + " --t 0.5 --cond " + path("cond.npy") + " --out " + path("out.npy"),
               "exactly one of --stage DIR and --synthetic");
}

TEST_F(SsFlowStageCli, StagesThatAreMissingBrokenOrOfAnotherKind) {
  const std::string rest = contexts() + " --out " + path("out.npy");
  expect_error("ss-flow --stage " + path("no-such-stage") + rest, "no-such-stage");
  // A flipped byte in a shard: the sha256 check refuses it before anything runs.
  fs::copy(path("stage"), path("corrupt"), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string shard = read_file(path("corrupt/stage-000.bin"));
  shard[shard.size() / 2] ^= 1;
  write_file_atomic(path("corrupt/stage-000.bin"), shard);
  expect_error("ss-flow --stage " + path("corrupt") + rest, "sha256");
  // A pack of another stage.
  fs::copy(path("stage"), path("other"), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string m = read_file(path("other/manifest.json"));
  m.replace(m.find("sparseStructureFlow"), std::string("sparseStructureFlow").size(), "slatDecoder");
  write_file_atomic(path("other/manifest.json"), m);
  expect_error("ss-flow --stage " + path("other") + rest, "not sparseStructureFlow");
  expect_error("ss-flow-forward --stage " + path("other") + " --x " + path("cond.npy") + " --t 0.5 --cond " + path("cond.npy") +
                   " --out " + path("out.npy"),
               "not sparseStructureFlow");
}

TEST_F(SsFlowStageCli, BenchReportsTheBatchSamplingRun) {
  // The batch run is timed and reported beside the single one (figures only mean something on a
  // GPU; here it must run and say what it ran).
  auto r = run_ember("bench ss-flow" + stage() + " --steps 2 --repeats 1 --batch-samples 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("sampling, 2 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sampling a batch of 2 latents"), std::string::npos) << r.out;
  r = run_ember("bench ss-flow" + stage() + " --steps 1 --repeats 1 --batch2-only --batch-samples 0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("sampling, 1 steps"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sampling a batch"), std::string::npos) << r.out;
}
