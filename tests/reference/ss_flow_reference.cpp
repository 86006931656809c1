#include "reference/ss_flow_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace ember::reference {
namespace {

int g_threads = 0;  // 0: every hardware thread

// Runs f(begin, end) over contiguous chunks of [0, n) on threads() threads.
template <class F>
void parallel_for(int64_t n, F&& f) {
  const int64_t T = std::min<int64_t>(threads(), n);
  if (T <= 1) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t k = 1; k < T; k++) pool.emplace_back([&f, k, n, T] { f(k * n / T, (k + 1) * n / T); });
  f(int64_t(0), n / T);
  for (auto& t : pool) t.join();
}

// The hot loops, compiled for AVX2 and for the baseline (picked at run time); no FMA, so both
// round alike.
constexpr int64_t kTokenBlock = 4, kRowBlock = 64;  // linear: tokens x rows per accumulator block (2 KiB)
constexpr int64_t kQueryBlock = 8, kKeyTile = 128;  // attention: queries per block, keys per score tile
constexpr int64_t kMaxHeadDim = 128;

// y rows of token blocks [begin, end): y[t][r] = b[r] + sum over c ascending of wt[c][r] x[t][c].
__attribute__((target_clones("avx2", "default"))) void linear_blocks(const float* x, int64_t tokens, int64_t in,
                                                                   const double* wt, const float* b, int64_t out, float* y,
                                                                   int64_t begin, int64_t end) {
  double acc[kTokenBlock][kRowBlock];
  for (int64_t r0 = 0; r0 < out; r0 += kRowBlock) {  // one column panel of wt stays in cache across tokens
    const int64_t nr = std::min(kRowBlock, out - r0);
    for (int64_t blk = begin; blk < end; blk++) {
      const int64_t t0 = blk * kTokenBlock, nt = std::min(kTokenBlock, tokens - t0);
      for (int64_t i = 0; i < nt; i++)
        for (int64_t j = 0; j < nr; j++) acc[i][j] = b ? double(b[r0 + j]) : 0.0;
      for (int64_t c = 0; c < in; c++) {
        const double* wc = wt + c * out + r0;
        for (int64_t i = 0; i < nt; i++) {
          const double xv = x[(t0 + i) * in + c];
          for (int64_t j = 0; j < nr; j++) acc[i][j] += wc[j] * xv;
        }
      }
      for (int64_t i = 0; i < nt; i++)
        for (int64_t j = 0; j < nr; j++) y[(t0 + i) * out + r0 + j] = float(acc[i][j]);
    }
  }
}

// Attention outputs of items [begin, end) (item = head * query blocks + query block); kt[h] is
// head h's keys transposed [D][nk], vh[h] its values [nk][D] (D = head_dim <= kMaxHeadDim).
__attribute__((target_clones("avx2", "default"))) void attention_items(
    const float* q, int64_t nq, int64_t q_stride, int64_t q_off, const std::vector<std::vector<double>>& kt,
    const std::vector<std::vector<double>>& vh, int64_t nk, int64_t heads, int64_t D, double scale, float* out, int64_t begin,
    int64_t end) {
  const int64_t qblocks = (nq + kQueryBlock - 1) / kQueryBlock;
  std::vector<double> s(size_t(kQueryBlock * nk));
  double qd[kQueryBlock][kMaxHeadDim], o[kQueryBlock][kMaxHeadDim];
  for (int64_t item = begin; item < end; item++) {
    const int64_t h = item / qblocks, i0 = (item % qblocks) * kQueryBlock, ni = std::min(kQueryBlock, nq - i0);
    const double* K = kt[size_t(h)].data();
    const double* V = vh[size_t(h)].data();
    for (int64_t i = 0; i < ni; i++)
      for (int64_t c = 0; c < D; c++) qd[i][c] = q[(i0 + i) * q_stride + q_off + h * D + c];
    for (int64_t j0 = 0; j0 < nk; j0 += kKeyTile) {
      const int64_t nj = std::min(kKeyTile, nk - j0);
      for (int64_t i = 0; i < ni; i++) std::fill_n(&s[size_t(i * nk + j0)], nj, 0.0);
      for (int64_t c = 0; c < D; c++) {
        const double* kc = K + c * nk + j0;
        for (int64_t i = 0; i < ni; i++) {
          double* si = &s[size_t(i * nk + j0)];
          const double qc = qd[i][c];
          for (int64_t j = 0; j < nj; j++) si[j] += qc * kc[j];
        }
      }
    }
    for (int64_t i = 0; i < ni; i++) {
      double* si = &s[size_t(i * nk)];
      double m = -INFINITY;
      for (int64_t j = 0; j < nk; j++) m = std::max(m, si[j] *= scale);
      double sum = 0;
      for (int64_t j = 0; j < nk; j++) sum += (si[j] = std::exp(si[j] - m));
      std::fill_n(o[i], D, 0.0);
      for (int64_t j = 0; j < nk; j++) {
        const double p = si[j];
        const double* vj = V + j * D;
        for (int64_t c = 0; c < D; c++) o[i][c] += p * vj[c];
      }
      for (int64_t c = 0; c < D; c++) out[(i0 + i) * heads * D + h * D + c] = float(o[i][c] / sum);
    }
  }
}

const std::vector<float>& get(const Weights& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: missing weight " + name);
  return it->second;
}

}  // namespace

int threads() { return g_threads > 0 ? g_threads : std::max(1, int(std::thread::hardware_concurrency())); }
void set_threads(int n) { g_threads = n; }

std::vector<float> linear(const std::vector<float>& x, int64_t tokens, int64_t in, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t out) {
  // y[t][r] = b[r] + sum over c ascending of w[r][c] x[t][c], in double. The loops run c outside r
  // over a transposed copy of w so the innermost loop is an elementwise update the compiler
  // vectorizes; the order of each sum is unchanged.
  std::vector<double> wt(size_t(in * out));
  for (int64_t r = 0; r < out; r++)
    for (int64_t c = 0; c < in; c++) wt[size_t(c * out + r)] = w[size_t(r * in + c)];
  std::vector<float> y(size_t(tokens * out));
  const int64_t blocks = (tokens + kTokenBlock - 1) / kTokenBlock;
  parallel_for(blocks, [&](int64_t begin, int64_t end) {
    linear_blocks(x.data(), tokens, in, wt.data(), b.empty() ? nullptr : b.data(), out, y.data(), begin, end);
  });
  return y;
}

std::vector<float> layer_norm(const std::vector<float>& x, int64_t tokens, int64_t channels, double eps,
                              const std::vector<float>& weight, const std::vector<float>& bias) {
  std::vector<float> y(x.size());
  for (int64_t t = 0; t < tokens; t++) {
    const float* xr = &x[size_t(t * channels)];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < channels; c++) mean += xr[c];
    mean /= double(channels);
    for (int64_t c = 0; c < channels; c++) var += (xr[c] - mean) * (xr[c] - mean);
    var /= double(channels);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < channels; c++) {
      double v = (xr[c] - mean) * rstd;
      if (!weight.empty()) v = v * weight[size_t(c)] + bias[size_t(c)];
      y[size_t(t * channels + c)] = float(v);
    }
  }
  return y;
}

float gelu_tanh(float x) {
  const double v = x;
  return float(0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
}

float silu(float x) { return float(double(x) / (1.0 + std::exp(-double(x)))); }

void head_rms_norm(std::vector<float>& x, int64_t tokens, int64_t stride, int64_t offset, int64_t heads,
                   const std::vector<float>& gamma) {
  for (int64_t t = 0; t < tokens; t++)
    for (int64_t h = 0; h < heads; h++) {
      float* v = &x[size_t(t * stride + offset + h * 64)];
      double n = 0;
      for (int d = 0; d < 64; d++) n += double(v[d]) * v[d];
      const double inv = 1.0 / std::max(std::sqrt(n), 1e-12);
      for (int d = 0; d < 64; d++) v[d] = float(v[d] * inv * 8.0 * gamma[size_t(h * 64 + d)]);
    }
}

std::vector<float> attention(const std::vector<float>& q, int64_t nq, int64_t q_stride, int64_t q_off,
                             const std::vector<float>& kv, int64_t nk, int64_t kv_stride, int64_t k_off,
                             int64_t v_off, int64_t heads, double scale, int64_t head_dim) {
  if (head_dim < 1 || head_dim > kMaxHeadDim) throw std::runtime_error("reference attention: head_dim out of range");
  const int64_t D = head_dim;
  // Per query: s_j = scale * sum_c q_c k_jc (c ascending), p_j = exp(s_j - max s), o_c = sum_j p_j
  // v_jc (j ascending) / sum_j p_j, all in double. Keys are transposed per head and scores built
  // for a block of queries over a tile of keys, so the inner loops are elementwise; the order of
  // every sum is that of the plain loops.
  std::vector<float> out(size_t(nq * heads * D));
  const int64_t qblocks = (nq + kQueryBlock - 1) / kQueryBlock;
  std::vector<std::vector<double>> kt(static_cast<size_t>(heads)), vh(static_cast<size_t>(heads));
  for (int64_t h = 0; h < heads; h++) {
    kt[size_t(h)].resize(size_t(D * nk));
    vh[size_t(h)].resize(size_t(nk * D));
    for (int64_t j = 0; j < nk; j++)
      for (int64_t c = 0; c < D; c++) {
        kt[size_t(h)][size_t(c * nk + j)] = kv[size_t(j * kv_stride + k_off + h * D + c)];
        vh[size_t(h)][size_t(j * D + c)] = kv[size_t(j * kv_stride + v_off + h * D + c)];
      }
  }
  parallel_for(heads * qblocks, [&](int64_t begin, int64_t end) {
    attention_items(q.data(), nq, q_stride, q_off, kt, vh, nk, heads, D, scale, out.data(), begin, end);
  });
  return out;
}

std::vector<float> timestep_frequencies(double t) {
  std::vector<float> f(256);
  const double T = 1000.0 * t;
  for (int i = 0; i < 128; i++) {
    const double g = std::exp(-std::log(10000.0) * i / 128.0);
    f[size_t(i)] = float(std::cos(T * g));
    f[size_t(128 + i)] = float(std::sin(T * g));
  }
  return f;
}

std::vector<float> ss_flow_forward(const formats::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& x,
                                   const std::vector<double>& t, const std::vector<float>& cond, int64_t ctx_tokens) {
  const int64_t B = int64_t(t.size()), N = cfg.tokens(), C = cfg.model_channels, H = cfg.num_heads;
  const int64_t Cin = cfg.in_channels, Cout = cfg.out_channels, Cc = cfg.cond_channels, F = cfg.mlp_channels();
  std::vector<float> v(size_t(B * Cout * N));
  for (int64_t b = 0; b < B; b++) {
    // Tokens: token n carries the channels of voxel n.
    std::vector<float> xt(size_t(N * Cin));
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cin; c++) xt[size_t(n * Cin + c)] = x[size_t((b * Cin + c) * N + n)];
    std::vector<float> h = linear(xt, N, Cin, get(w, "input_layer.weight"), get(w, "input_layer.bias"), C);
    const auto& pos = get(w, "pos_emb");
    for (size_t i = 0; i < h.size(); i++) h[i] += pos[i];

    std::vector<float> temb = linear(timestep_frequencies(t[size_t(b)]), 1, 256, get(w, "t_embedder.mlp.0.weight"),
                                     get(w, "t_embedder.mlp.0.bias"), C);
    for (auto& e : temb) e = silu(e);
    temb = linear(temb, 1, C, get(w, "t_embedder.mlp.2.weight"), get(w, "t_embedder.mlp.2.bias"), C);
    for (auto& e : temb) e = silu(e);  // every block's adaLN_modulation starts with SiLU

    const std::vector<float> ctx(cond.begin() + b * ctx_tokens * Cc, cond.begin() + (b + 1) * ctx_tokens * Cc);
    for (int64_t blk = 0; blk < cfg.num_blocks; blk++) {
      const std::string p = "blocks." + std::to_string(blk) + ".";
      const auto mod = linear(temb, 1, C, get(w, p + "adaLN_modulation.1.weight"), get(w, p + "adaLN_modulation.1.bias"), 6 * C);
      auto chunk = [&](int i, int64_t c) { return mod[size_t(i * C + c)]; };
      auto modulate = [&](std::vector<float> y, int shift, int scale) {
        for (int64_t n = 0; n < N; n++)
          for (int64_t c = 0; c < C; c++) {
            float& e = y[size_t(n * C + c)];
            e = e * (1.0f + chunk(scale, c)) + chunk(shift, c);
          }
        return y;
      };
      // Self-attention.
      auto hn = modulate(layer_norm(h, N, C, 1e-6), 0, 1);
      auto qkv = linear(hn, N, C, get(w, p + "self_attn.to_qkv.weight"), get(w, p + "self_attn.to_qkv.bias"), 3 * C);
      head_rms_norm(qkv, N, 3 * C, 0, H, get(w, p + "self_attn.q_rms_norm.gamma"));
      head_rms_norm(qkv, N, 3 * C, C, H, get(w, p + "self_attn.k_rms_norm.gamma"));
      auto att = attention(qkv, N, 3 * C, 0, qkv, N, 3 * C, C, 2 * C, H, 1.0 / 8.0);
      auto o = linear(att, N, C, get(w, p + "self_attn.to_out.weight"), get(w, p + "self_attn.to_out.bias"), C);
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) h[size_t(n * C + c)] += chunk(2, c) * o[size_t(n * C + c)];
      // Cross-attention (no modulation, no gate).
      hn = layer_norm(h, N, C, 1e-6, get(w, p + "norm2.weight"), get(w, p + "norm2.bias"));
      auto q = linear(hn, N, C, get(w, p + "cross_attn.to_q.weight"), get(w, p + "cross_attn.to_q.bias"), C);
      auto kv = linear(ctx, ctx_tokens, Cc, get(w, p + "cross_attn.to_kv.weight"), get(w, p + "cross_attn.to_kv.bias"), 2 * C);
      att = attention(q, N, C, 0, kv, ctx_tokens, 2 * C, 0, C, H, 1.0 / 8.0);
      o = linear(att, N, C, get(w, p + "cross_attn.to_out.weight"), get(w, p + "cross_attn.to_out.bias"), C);
      for (size_t i = 0; i < h.size(); i++) h[i] += o[i];
      // MLP.
      hn = modulate(layer_norm(h, N, C, 1e-6), 3, 4);
      auto m = linear(hn, N, C, get(w, p + "mlp.mlp.0.weight"), get(w, p + "mlp.mlp.0.bias"), F);
      for (auto& e : m) e = gelu_tanh(e);
      o = linear(m, N, F, get(w, p + "mlp.mlp.2.weight"), get(w, p + "mlp.mlp.2.bias"), C);
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) h[size_t(n * C + c)] += chunk(5, c) * o[size_t(n * C + c)];
    }
    auto out = linear(layer_norm(h, N, C, 1e-5), N, C, get(w, "out_layer.weight"), get(w, "out_layer.bias"), Cout);
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cout; c++) v[size_t((b * Cout + c) * N + n)] = out[size_t(n * Cout + c)];
  }
  return v;
}

std::vector<double> flow_schedule(int steps, double r) {
  std::vector<double> ts(size_t(steps + 1));
  for (int i = 0; i <= steps; i++) {
    const double t = 1.0 - double(i) / steps;  // linspace(1, 0, steps + 1)
    ts[size_t(i)] = r * t / (1.0 + (r - 1.0) * t);
  }
  return ts;
}

std::vector<float> flow_sample(const formats::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& noise,
                               const std::vector<float>& cond, const std::vector<float>& neg_cond, int64_t ctx_tokens,
                               const trellis::SamplerOptions& o, std::vector<float>* velocities) {
  std::vector<float> x = noise;
  if (velocities) velocities->clear();
  // Upstream's batch: B latents through one forward each for cond and neg_cond, a context of
  // batch 1 repeated to B rows.
  const size_t n = size_t(cfg.in_channels * cfg.tokens()), ctx_n = size_t(ctx_tokens * cfg.cond_channels);
  const size_t B = noise.size() / n;
  auto repeated = [&](const std::vector<float>& c) {
    if (c.size() == B * ctx_n) return c;
    if (c.size() != ctx_n) throw std::invalid_argument("reference flow_sample: a context of batch 1 or B");
    std::vector<float> r;
    for (size_t b = 0; b < B; b++) r.insert(r.end(), c.begin(), c.end());
    return r;
  };
  const std::vector<float> cond_b = repeated(cond), neg_b = repeated(neg_cond);
  const auto ts = flow_schedule(o.steps, o.rescale_t);
  for (int i = 0; i < o.steps; i++) {
    const double t = ts[size_t(i)], t_prev = ts[size_t(i + 1)];
    const std::vector<double> tb(B, t);
    auto v = ss_flow_forward(cfg, w, x, tb, cond_b, ctx_tokens);
    if (o.cfg_lo <= t && t <= o.cfg_hi) {
      auto vn = ss_flow_forward(cfg, w, x, tb, neg_b, ctx_tokens);
      for (size_t k = 0; k < v.size(); k++) v[k] = float((1.0 + o.cfg_strength) * v[k] - o.cfg_strength * vn[k]);
    }
    if (velocities) velocities->insert(velocities->end(), v.begin(), v.end());
    for (size_t k = 0; k < x.size(); k++) x[k] = float(x[k] - (t - t_prev) * v[k]);
  }
  return x;
}

}  // namespace ember::reference
