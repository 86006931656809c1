#include "trellis/flow_sampler.h"

#include <chrono>
#include <cmath>

#include "common/error.h"
#include "kernels/flow_elementwise.h"

namespace ember::trellis {

std::vector<double> flow_schedule(int steps, double r) {
  std::vector<double> ts(size_t(steps) + 1);
  for (int i = 0; i <= steps; i++) {
    const double s = 1.0 - double(i) / double(steps);
    ts[size_t(i)] = r * s / (1.0 + (r - 1.0) * s);
  }
  ts[size_t(steps)] = 0.0;  // the last step lands on t = 0 exactly
  return ts;
}

bool guided_at(double t, const SamplerOptions& o) { return o.cfg_lo <= t && t <= o.cfg_hi; }

std::vector<float> gaussian_noise(uint64_t seed, size_t count) {
  uint64_t state = seed;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto uniform = [&] { return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };  // (0, 1)
  std::vector<float> out(count);
  for (size_t i = 0; i < count; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), a = 2.0 * M_PI * uniform();
    out[i] = float(r * std::cos(a));
    if (i + 1 < count) out[i + 1] = float(r * std::sin(a));
  }
  return out;
}

FlowSampler::FlowSampler(SsFlowModel& model) : model_(model) {
  const auto& c = model.config();
  if (c.in_channels != c.out_channels)
    throw Error("the sampler needs as many output channels as input channels", "ss-flow stage");
  const uint32_t n = uint32_t(c.tokens() * c.in_channels);
  const gpu::Device& d = model.device();
  x_ = d.create_storage(uint64_t(n) * 4, "sampler latent");
  params_ = d.create_uniform(kernels::EulerParams{n, 0, 0.0f, 0.0f}, "sampler step");
  step_ = kernels::euler_step(model.kernels(), x_, model.output(), params_, n, "euler_step");
}

FlowSampler::~FlowSampler() = default;

std::vector<float> FlowSampler::sample(const std::vector<float>& noise, const SamplerOptions& o,
                                       const std::function<void(const StepReport&)>& progress, gpu::Profiler* profiler,
                                       std::vector<float>* velocities) {
  o.validate();
  const auto& c = model_.config();
  const int64_t N = c.tokens(), Cin = c.in_channels;
  if (int64_t(noise.size()) != N * Cin)
    throw Error("noise has " + std::to_string(noise.size()) + " values, the latent " + std::to_string(N * Cin), "--noise");
  const gpu::Device& d = model_.device();
  auto xt = to_tokens(noise, Cin, N);
  d.upload(x_, std::span<const float>(xt));
  const uint64_t bytes = uint64_t(N * Cin) * 4;
  const auto ts = flow_schedule(o.steps, o.rescale_t);
  // The euler step leaves the guided velocity in the output's first row; each step's is kept here.
  gpu::Buffer dump;
  if (velocities) dump = d.create_storage(uint64_t(o.steps) * bytes, "sampler velocities");
  // Step i + 1 is recorded and queued while the GPU runs step i, so the GPU never waits for the
  // CPU between steps. That is safe: its timestep and Euler parameters are queue writes, which the
  // queue orders after step i's work.
  auto last_done = std::chrono::steady_clock::now();
  uint64_t in_flight = 0;  // the mark of the step before this one
  auto finish = [&](int i) {
    d.wait_for(in_flight, "ss-flow sampling step " + std::to_string(i));
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - last_done).count();
    last_done = now;
    if (progress) progress({i, o.steps, ts[size_t(i)], ts[size_t(i + 1)], guided_at(ts[size_t(i)], o), secs});
  };
  for (int i = 0; i < o.steps; i++) {
    const double t = ts[size_t(i)], t_next = ts[size_t(i + 1)];
    const bool guided = guided_at(t, o);
    const int B = guided ? 2 : 1;
    model_.set_timesteps(std::vector<double>(size_t(B), t));
    const kernels::EulerParams p{uint32_t(N * Cin), guided ? 1u : 0u, float(t - t_next), float(o.cfg_strength)};
    d.upload(params_, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&p), sizeof(p)));
    gpu::Recorder rec(d, profiler);
    rec.copy(x_, 0, model_.input(), 0, bytes);
    if (guided) model_.record_guided_forward(rec);
    else model_.record_forward(rec, 1);
    step_.record(rec);
    if (velocities) rec.copy(model_.output(), 0, dump, uint64_t(i) * bytes, bytes);
    rec.submit();
    const uint64_t mark = d.mark();
    if (i > 0) finish(i - 1);
    in_flight = mark;
  }
  finish(o.steps - 1);
  if (velocities) {
    const auto all = d.download_as<float>(dump);
    velocities->clear();
    for (int i = 0; i < o.steps; i++) {
      auto v = from_tokens(std::span<const float>(all).subspan(size_t(i) * size_t(N * Cin), size_t(N * Cin)), Cin, N);
      velocities->insert(velocities->end(), v.begin(), v.end());
    }
  }
  return from_tokens(d.download_as<float>(x_), Cin, N);
}

std::vector<float> FlowSampler::sample_batch(const std::vector<float>& noise, std::span<const float> cond,
                                             std::span<const float> neg, int64_t ctx_tokens, const SamplerOptions& o,
                                             const std::function<void(const StepReport&)>& progress, gpu::Profiler* profiler,
                                             std::vector<float>* velocities) {
  o.validate();
  const auto& c = model_.config();
  const size_t n = size_t(c.tokens() * c.in_channels), ctx_n = size_t(ctx_tokens * c.cond_channels);
  if (noise.empty() || noise.size() % n != 0)
    throw Error("noise has " + std::to_string(noise.size()) + " values, not a whole number of latents of " + std::to_string(n), "--noise");
  const size_t B = noise.size() / n;
  auto rows = [&](std::span<const float> ctx, const std::string& what) {
    if (ctx_n == 0 || (ctx.size() != ctx_n && ctx.size() != B * ctx_n))
      throw Error("context of " + std::to_string(ctx.size()) + " values for " + std::to_string(B) + " latent(s): want 1 or " +
                      std::to_string(B) + " contexts of " + std::to_string(ctx_tokens) + " x " + std::to_string(c.cond_channels),
                  what, "give one context for every latent, or one for all");
    return ctx.size() / ctx_n;
  };
  const size_t cond_rows = rows(cond, "--cond"), neg_rows = rows(neg, "--neg-cond");
  std::vector<float> out;
  out.reserve(B * n);
  std::vector<std::vector<float>> per_sample(velocities ? B : 0);
  for (size_t b = 0; b < B; b++) {
    if (b == 0 || cond_rows > 1 || neg_rows > 1)
      model_.set_context(cond.subspan(cond_rows > 1 ? b * ctx_n : 0, ctx_n), neg.subspan(neg_rows > 1 ? b * ctx_n : 0, ctx_n),
                         ctx_tokens);
    auto report = [&](const StepReport& r) {
      StepReport s = r;
      s.sample = int(b);
      s.samples = int(B);
      if (progress) progress(s);
    };
    const std::vector<float> x0(noise.begin() + std::ptrdiff_t(b * n), noise.begin() + std::ptrdiff_t((b + 1) * n));
    auto x = sample(x0, o, report, profiler, velocities ? &per_sample[b] : nullptr);
    out.insert(out.end(), x.begin(), x.end());
  }
  if (velocities) {  // [B][steps] -> [steps][B], as upstream stacks each step's batch
    velocities->clear();
    velocities->reserve(size_t(o.steps) * B * n);
    for (int i = 0; i < o.steps; i++)
      for (size_t b = 0; b < B; b++)
        velocities->insert(velocities->end(), per_sample[b].begin() + std::ptrdiff_t(size_t(i) * n),
                           per_sample[b].begin() + std::ptrdiff_t(size_t(i + 1) * n));
  }
  return out;
}

}  // namespace ember::trellis
