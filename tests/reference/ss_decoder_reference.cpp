#include "reference/ss_decoder_reference.h"

#include <cmath>
#include <stdexcept>

namespace ember::reference {

Volume conv3d(const Volume& x, const std::vector<float>& w, const std::vector<float>& b, int64_t out) {
  const int64_t C = x.channels, D = x.d, H = x.h, W = x.w;
  if (int64_t(w.size()) != out * C * 27 || int64_t(b.size()) != out) throw std::runtime_error("conv3d reference: weight size");
  Volume y{out, D, H, W, std::vector<float>(size_t(out * D * H * W))};
  std::vector<double> acc(size_t(D * H * W));
  for (int64_t o = 0; o < out; o++) {
    std::fill(acc.begin(), acc.end(), double(b[size_t(o)]));
    for (int64_t ci = 0; ci < C; ci++) {
      const float* xc = &x.v[size_t(ci * D * H * W)];
      for (int64_t kd = 0; kd < 3; kd++)
        for (int64_t kh = 0; kh < 3; kh++)
          for (int64_t kw = 0; kw < 3; kw++) {
            const double wv = w[size_t(((o * C + ci) * 3 + kd) * 9 + kh * 3 + kw)];
            for (int64_t z = 0; z < D; z++) {
              const int64_t zz = z + kd - 1;
              if (zz < 0 || zz >= D) continue;
              for (int64_t yy = 0; yy < H; yy++) {
                const int64_t sy = yy + kh - 1;
                if (sy < 0 || sy >= H) continue;
                for (int64_t xx = 0; xx < W; xx++) {
                  const int64_t sx = xx + kw - 1;
                  if (sx < 0 || sx >= W) continue;
                  acc[size_t((z * H + yy) * W + xx)] += wv * xc[size_t((zz * H + sy) * W + sx)];
                }
              }
            }
          }
    }
    for (size_t i = 0; i < acc.size(); i++) y.v[size_t(o * D * H * W) + i] = float(acc[i]);
  }
  return y;
}

Volume channel_layer_norm(const Volume& x, const std::vector<float>& weight, const std::vector<float>& bias, bool silu,
                          double eps) {
  Volume y = x;
  const int64_t C = x.channels, N = x.voxels();
  for (int64_t n = 0; n < N; n++) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; c++) mean += x.v[size_t(c * N + n)];
    mean /= double(C);
    for (int64_t c = 0; c < C; c++) {
      const double d = x.v[size_t(c * N + n)] - mean;
      var += d * d;
    }
    var /= double(C);  // biased, as nn.LayerNorm
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; c++) {
      double v = (x.v[size_t(c * N + n)] - mean) * rstd * weight[size_t(c)] + bias[size_t(c)];
      if (silu) v = v / (1.0 + std::exp(-v));
      y.v[size_t(c * N + n)] = float(v);
    }
  }
  return y;
}

Volume pixel_shuffle_3d(const Volume& x) {
  if (x.channels % 8 != 0) throw std::runtime_error("pixel_shuffle_3d reference: channels not a multiple of 8");
  const int64_t C = x.channels / 8, D = x.d, H = x.h, W = x.w;
  Volume y{C, 2 * D, 2 * H, 2 * W, std::vector<float>(x.v.size())};
  for (int64_t c = 0; c < C; c++)
    for (int64_t a = 0; a < 2; a++)
      for (int64_t b = 0; b < 2; b++)
        for (int64_t e = 0; e < 2; e++)
          for (int64_t z = 0; z < D; z++)
            for (int64_t yy = 0; yy < H; yy++)
              for (int64_t xx = 0; xx < W; xx++)
                y.v[size_t(((c * 2 * D + 2 * z + a) * 2 * H + 2 * yy + b) * 2 * W + 2 * xx + e)] =
                    x.v[size_t((((c * 8 + a * 4 + b * 2 + e) * D + z) * H + yy) * W + xx)];
  return y;
}

namespace {

const std::vector<float>& get(const std::map<std::string, std::vector<float>>& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("ss_decoder reference: missing tensor " + name);
  return it->second;
}

// ResBlock3d with channels == out_channels (the decoder's only kind): the skip is the identity.
Volume res_block(const std::map<std::string, std::vector<float>>& w, const std::string& p, const Volume& x) {
  Volume h = channel_layer_norm(x, get(w, p + "norm1.weight"), get(w, p + "norm1.bias"), true);
  h = conv3d(h, get(w, p + "conv1.weight"), get(w, p + "conv1.bias"), x.channels);
  h = channel_layer_norm(h, get(w, p + "norm2.weight"), get(w, p + "norm2.bias"), true);
  h = conv3d(h, get(w, p + "conv2.weight"), get(w, p + "conv2.bias"), x.channels);
  for (size_t i = 0; i < h.v.size(); i++) h.v[i] += x.v[i];
  return h;
}

}  // namespace

Volume ss_decoder_forward(const formats::SsDecoderConfig& c, const std::map<std::string, std::vector<float>>& w,
                          const Volume& latent) {
  Volume h = conv3d(latent, get(w, "input_layer.weight"), get(w, "input_layer.bias"), c.channels[0]);
  for (int64_t i = 0; i < c.num_res_blocks_middle; i++) h = res_block(w, "middle_block." + std::to_string(i) + ".", h);
  int64_t j = 0;
  for (size_t level = 0; level < c.channels.size(); level++) {
    for (int64_t r = 0; r < c.num_res_blocks; r++) h = res_block(w, "blocks." + std::to_string(j++) + ".", h);
    if (level + 1 < c.channels.size()) {
      const std::string p = "blocks." + std::to_string(j++) + ".conv.";
      h = pixel_shuffle_3d(conv3d(h, get(w, p + "weight"), get(w, p + "bias"), c.channels[level + 1] * 8));
    }
  }
  h = channel_layer_norm(h, get(w, "out_layer.0.weight"), get(w, "out_layer.0.bias"), true);
  return conv3d(h, get(w, "out_layer.2.weight"), get(w, "out_layer.2.bias"), c.out_channels);
}

}  // namespace ember::reference
