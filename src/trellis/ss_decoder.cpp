#include "trellis/ss_decoder.h"

#include <algorithm>

#include "common/error.h"
#include "kernels/conv3d.h"
#include "kernels/layer_norm.h"
#include "kernels/pixel_shuffle3d.h"
#include "trellis/ss_flow.h"
#include "trellis/stage_upload.h"

namespace ember::trellis {

std::unique_ptr<PackTensors> open_ss_decoder_stage(const std::filesystem::path& dir) {
  auto p = std::make_unique<PackTensors>(formats::StagePack::open(dir, true));
  if (p->pack().manifest().stage != kSsDecoderStage)
    throw Error("this stage is '" + p->pack().manifest().stage + "', not " + kSsDecoderStage, p->origin(),
                "point at the sparse-structure decoder stage (`ember pack trellis --stage ss-decoder`)");
  return p;
}

formats::SsDecoderConfig ss_decoder_config_of(const TensorSource& source) {
  return formats::infer_ss_decoder_config(source.shapes(), source.origin());
}

MemoryTensors synth_ss_decoder_stage(const formats::SsDecoderConfig& config, uint64_t seed) {
  return encode_stage_tensors(formats::synth_ss_decoder_weights(config, seed), formats::ss_decoder_tensor_shapes(config));
}

struct SsDecoderModel::Impl {
  struct Norm {
    gpu::Buffer weight, bias;
  };
  std::vector<kernels::QuantizedMatrix> convs;  // kept alive: the dispatches bind them
  std::vector<Norm> norms;
  gpu::Buffer in, out;
  std::array<gpu::Buffer, 3> work;
  std::vector<kernels::Dispatch> graph;
  double flops = 0;
};

namespace {

std::string region_of(const std::string& module) { return module; }

}  // namespace

SsDecoderModel::SsDecoderModel(gpu::KernelCache& kernels, const TensorSource& s, std::array<uint32_t, 3> extent)
    : kernels_(kernels), config_(ss_decoder_config_of(s)), extent_(extent), impl_(std::make_unique<Impl>()) {
  const gpu::Device& dev = kernels.device();
  const auto& c = config_;
  for (uint32_t e : extent)
    if (e == 0 || e > 64) throw Error("latent extent " + std::to_string(e) + " outside 1..64", "sparse-structure decoder");
  // The largest activation: every level's channels (and its upsampler's 8x output) at its extent.
  uint64_t voxels = uint64_t(extent[0]) * extent[1] * extent[2], most = voxels * uint64_t(c.latent_channels);
  for (size_t l = 0; l < c.channels.size(); l++) {
    most = std::max(most, voxels * uint64_t(c.channels[l]));
    if (l + 1 < c.channels.size()) most = std::max(most, voxels * uint64_t(c.channels[l + 1]) * 8);
    if (l + 1 < c.channels.size()) voxels *= 8;
  }
  most = std::max(most, voxels * uint64_t(c.out_channels));
  impl_->in = dev.create_storage(uint64_t(extent[0]) * extent[1] * extent[2] * uint64_t(c.latent_channels) * 4, "ss_decoder latent");
  impl_->out = dev.create_storage(voxels * uint64_t(c.out_channels) * 4, "ss_decoder logits");
  for (auto& b : impl_->work) b = dev.create_storage(most * 4, "ss_decoder activations");
  // Every weight uploaded first, so the dispatches below can hold pointers into stable vectors.
  const auto shapes = s.shapes();
  size_t n_convs = 0, n_norms = 0;
  for (const auto& [name, shape] : shapes) {
    if (shape.size() == 5) n_convs++;
    if (shape.size() == 1 && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) n_norms++;
  }
  impl_->convs.reserve(n_convs);
  impl_->norms.reserve(n_norms);
  auto conv_w = [&](const std::string& module) -> const kernels::QuantizedMatrix& {
    impl_->convs.push_back(upload_linear(dev, s.get(module + ".weight"), s.get(module + ".bias")));
    return impl_->convs.back();
  };
  auto norm_w = [&](const std::string& module) -> const Impl::Norm& {
    impl_->norms.push_back({upload_raw(dev, s.get(module + ".weight")), upload_raw(dev, s.get(module + ".bias"))});
    return impl_->norms.back();
  };
  std::array<uint32_t, 3> ext = extent;
  auto& g = impl_->graph;
  auto conv = [&](const std::string& module, const gpu::Buffer& x, const gpu::Buffer& y, const gpu::Buffer* residual) {
    const auto& w = conv_w(module);
    g.push_back(kernels::conv3d(kernels, {.x = &x, .w = &w, .y = &y, .d = ext[0], .h = ext[1], .w_size = ext[2], .residual = residual},
                                region_of(module)));
    impl_->flops += 2.0 * double(ext[0]) * ext[1] * ext[2] * w.rows * w.cols;
  };
  auto norm_silu = [&](const std::string& module, const gpu::Buffer& x, const gpu::Buffer& y, int64_t channels) {
    const auto& n = norm_w(module);
    g.push_back(kernels::layer_norm(kernels, {.x = &x, .y = &y, .rows = ext[0] * ext[1] * ext[2], .channels = uint32_t(channels),
                                              .eps = 1e-5f, .weight = &n.weight, .bias = &n.bias, .silu = true,
                                              .subgroups = dev.has_subgroups()},
                                    region_of(module) + "+silu"));
  };
  // x: the residual stream; n, t: scratch. Returns the buffer that holds the block's output.
  int x = 0;
  auto res_block = [&](const std::string& p, int64_t ch) {
    const int n = (x + 1) % 3, t = (x + 2) % 3;
    auto& W = impl_->work;
    norm_silu(p + "norm1", W[size_t(x)], W[size_t(n)], ch);
    conv(p + "conv1", W[size_t(n)], W[size_t(t)], nullptr);
    norm_silu(p + "norm2", W[size_t(t)], W[size_t(n)], ch);
    conv(p + "conv2", W[size_t(n)], W[size_t(t)], &W[size_t(x)]);  // h + skip (identity: channels unchanged)
    x = t;
  };
  conv("input_layer", impl_->in, impl_->work[0], nullptr);
  for (int64_t i = 0; i < c.num_res_blocks_middle; i++) res_block("middle_block." + std::to_string(i) + ".", c.channels[0]);
  int64_t j = 0;
  for (size_t l = 0; l < c.channels.size(); l++) {
    for (int64_t r = 0; r < c.num_res_blocks; r++) res_block("blocks." + std::to_string(j++) + ".", c.channels[l]);
    if (l + 1 < c.channels.size()) {
      const std::string p = "blocks." + std::to_string(j++) + ".conv";
      const int t = (x + 1) % 3, y = (x + 2) % 3;
      conv(p, impl_->work[size_t(x)], impl_->work[size_t(t)], nullptr);
      g.push_back(kernels::pixel_shuffle3d(kernels, impl_->work[size_t(t)], impl_->work[size_t(y)], ext[0], ext[1], ext[2],
                                           uint32_t(c.channels[l + 1]), p + ".pixel_shuffle"));
      for (auto& e : ext) e *= 2;
      x = y;
    }
  }
  norm_silu("out_layer.0", impl_->work[size_t(x)], impl_->work[size_t((x + 1) % 3)], c.channels.back());
  conv("out_layer.2", impl_->work[size_t((x + 1) % 3)], impl_->out, nullptr);
}

SsDecoderModel::~SsDecoderModel() = default;

std::array<uint32_t, 3> SsDecoderModel::output_extent() const {
  const uint32_t u = uint32_t(config_.upsampling());
  return {extent_[0] * u, extent_[1] * u, extent_[2] * u};
}

const gpu::Buffer& SsDecoderModel::input() const { return impl_->in; }
const gpu::Buffer& SsDecoderModel::output() const { return impl_->out; }

void SsDecoderModel::record(gpu::Recorder& rec) const {
  for (const auto& d : impl_->graph) d.record(rec);
}

std::vector<float> SsDecoderModel::decode(std::span<const float> latent, gpu::Profiler* profiler) {
  const int64_t C = config_.latent_channels, N = int64_t(extent_[0]) * extent_[1] * extent_[2];
  if (int64_t(latent.size()) != C * N)
    throw Error("latent has " + std::to_string(latent.size()) + " values, the decoder takes " + std::to_string(C) + " x " +
                    std::to_string(N),
                "sparse-structure decoder");
  const auto& dev = kernels_.device();
  dev.upload(impl_->in, std::span<const float>(to_tokens(latent, C, N)));
  gpu::Recorder rec(dev, profiler);
  record(rec);
  rec.submit();
  const auto o = output_extent();
  const int64_t M = int64_t(o[0]) * o[1] * o[2], out = config_.out_channels;
  auto y = dev.download_as<float>(impl_->out, 0, uint64_t(M * out));
  return out == 1 ? y : from_tokens(y, out, M);
}

double SsDecoderModel::flops() const { return impl_->flops; }

}  // namespace ember::trellis
