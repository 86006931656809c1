// CPU reference for TRELLIS SparseStructureFlowModel and FlowEulerGuidanceIntervalSampler, written
// from docs/models.md's semantics with plain loops (double accumulators) on dequantized weights. The
// oracle for src/kernels and src/trellis; independent of them. Multithreaded and ordered for the
// cache so the seed configuration's forward (1.4 TFLOP) takes seconds on a many-core host.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/ss_flow_config.h"
#include "trellis/sampler_options.h"

namespace ember::reference {

// The reference's matmuls and attention run on this many threads (default: every hardware
// thread); the result does not depend on it (each sum keeps its order).
int threads();
void set_threads(int n);

// State-dict name -> row-major f32 values (what the GPU computes with: dequantized / widened).
using Weights = std::map<std::string, std::vector<float>>;

// y[t][r] = sum_c w[r][c] x[t][c] + b[r]
std::vector<float> linear(const std::vector<float>& x, int64_t tokens, int64_t in, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t out);
// LayerNorm over rows of `channels`; weight/bias may be empty (no affine).
std::vector<float> layer_norm(const std::vector<float>& x, int64_t tokens, int64_t channels, double eps,
                              const std::vector<float>& weight = {}, const std::vector<float>& bias = {});
float gelu_tanh(float x);
float silu(float x);
// x / max(||x||, 1e-12) * 8 * gamma[head] for each 64-vector of q (cols [q_off, q_off+C)) of every row.
void head_rms_norm(std::vector<float>& x, int64_t tokens, int64_t stride, int64_t offset, int64_t heads,
                   const std::vector<float>& gamma);
// Softmax attention of one batch: q rows [nq][q_stride] at q_off + head*head_dim, k/v
// [nk][kv_stride]. out [nq][heads*head_dim]. scale multiplies the scores.
std::vector<float> attention(const std::vector<float>& q, int64_t nq, int64_t q_stride, int64_t q_off,
                             const std::vector<float>& kv, int64_t nk, int64_t kv_stride, int64_t k_off,
                             int64_t v_off, int64_t heads, double scale, int64_t head_dim = 64);
// [cos(T g_i), sin(T g_i)], g_i = exp(-ln(10000) i / 128), T = 1000 t.
std::vector<float> timestep_frequencies(double t);

// One forward. x: [B][in_channels][tokens] (latent layout), t: [B], cond: [B][ctx][cond_channels].
// Returns the velocity [B][out_channels][tokens].
std::vector<float> ss_flow_forward(const formats::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& x,
                                   const std::vector<double>& t, const std::vector<float>& cond, int64_t ctx_tokens);

// The rescaled time grid t_0 = 1 .. t_steps = 0.
std::vector<double> flow_schedule(int steps, double rescale_t);
// The guided Euler sampler from `noise` ([B][in_channels][tokens]); cond and neg_cond
// [B or 1][ctx][cond_channels], batch 1 repeated over the B rows as upstream does. With
// `velocities`, also each step's velocity after guidance ([steps][B][in_channels][tokens]).
std::vector<float> flow_sample(const formats::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& noise,
                               const std::vector<float>& cond, const std::vector<float>& neg_cond, int64_t ctx_tokens,
                               const trellis::SamplerOptions& options, std::vector<float>* velocities = nullptr);

}  // namespace ember::reference
