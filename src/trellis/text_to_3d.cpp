#include "trellis/text_to_3d.h"

#include <chrono>

#include "common/error.h"
#include "formats/trellis_pack.h"
#include "trellis/ss_decoder.h"
#include "trellis/ss_flow.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/text_encoder.h"

namespace ember::trellis {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The manifest's stage kind, checked before the stage's weights are read.
formats::StageManifest manifest_of(const std::filesystem::path& dir, const char* slot, const char* kind) {
  if (!std::filesystem::is_directory(dir))
    throw Error("stage directory " + dir.string() + " does not exist", std::string("pipeline.json: models.") + slot);
  auto m = formats::load_stage_manifest(dir / formats::kStageManifestFile);
  if (m.stage != kind)
    throw Error("models." + std::string(slot) + " holds a '" + m.stage + "' stage, not " + kind, dir.string(),
                "fix the directory names in pipeline.json");
  return m;
}

}  // namespace

struct TextTo3DPipeline::Impl {
  gpu::KernelCache& kernels;
  std::unique_ptr<TextEncoder> text;
  std::unique_ptr<PackTensors> flow_pack, decoder_pack;
  formats::SsFlowConfig flow_config;
  formats::SsDecoderConfig decoder_config;
  std::unique_ptr<SsFlowModel> flow;
  std::unique_ptr<SsDecoderModel> decoder;
};

TextTo3DPipeline::TextTo3DPipeline(gpu::KernelCache& kernels, const PipelineConfig& c)
    : impl_(new Impl{kernels, {}, {}, {}, {}, {}, {}, {}}) {
  const auto start = std::chrono::steady_clock::now();
  const std::pair<const char*, std::string> revisions[] = {
      {"text_encoder", manifest_of(c.text_encoder_dir(), "text_encoder", "textEncoder").upstream_revision},
      {"sparse_structure_flow_model", manifest_of(c.ss_flow_dir(), "sparse_structure_flow_model", "sparseStructureFlow").upstream_revision},
      {"sparse_structure_decoder", manifest_of(c.ss_decoder_dir(), "sparse_structure_decoder", kSsDecoderStage).upstream_revision}};
  for (const auto& [slot, rev] : revisions)
    if (rev.rfind("synthetic", 0) == 0) random_.push_back(slot);
  auto& I = *impl_;
  I.flow_pack = open_ss_flow_stage(c.ss_flow_dir());
  I.flow_config = ss_flow_config_of(*I.flow_pack);
  I.decoder_pack = open_ss_decoder_stage(c.ss_decoder_dir());
  I.decoder_config = ss_decoder_config_of(*I.decoder_pack);
  // Channels between stages, before the large uploads.
  if (I.flow_config.out_channels != I.decoder_config.latent_channels)
    throw Error("ss-flow makes latents of " + std::to_string(I.flow_config.out_channels) + " channels, the decoder takes " +
                    std::to_string(I.decoder_config.latent_channels),
                c.dir.string(), "the stages come from different models: use a matching ss-flow and ss-decoder");
  if (I.flow_config.in_channels != I.flow_config.out_channels)
    throw Error("ss-flow has " + std::to_string(I.flow_config.in_channels) + " input and " + std::to_string(I.flow_config.out_channels) +
                    " output channels; the sampler needs them equal", c.ss_flow_dir().string());
  if (I.decoder_config.out_channels != 1)
    throw Error("the decoder makes " + std::to_string(I.decoder_config.out_channels) + " channels, not one occupancy logit",
                c.ss_decoder_dir().string());
  I.text = std::make_unique<TextEncoder>(kernels, c.text_encoder_dir());
  if (I.text->width() != I.flow_config.cond_channels)
    throw Error("the text encoder's context is " + std::to_string(I.text->width()) + " wide, ss-flow attends to " +
                    std::to_string(I.flow_config.cond_channels) + " channels",
                c.dir.string(), "the stages come from different models: use the text encoder the flow model was trained with");
  // The flow stage's tuned candidate for this GPU, if `ember tune --stage` wrote one; else the defaults.
  I.flow = std::make_unique<SsFlowModel>(kernels, *I.flow_pack, stage_options(c.ss_flow_dir(), kernels.device().adapter()));
  const uint32_t R = uint32_t(I.flow_config.resolution);
  I.decoder = std::make_unique<SsDecoderModel>(kernels, *I.decoder_pack, std::array<uint32_t, 3>{R, R, R});
  times_.open_s = since(start);
}

TextTo3DPipeline::~TextTo3DPipeline() = default;

std::array<uint32_t, 3> TextTo3DPipeline::output_extent() const { return impl_->decoder->output_extent(); }

std::vector<TextTo3DSample> TextTo3DPipeline::run(const TextTo3DRequest& r, const TextTo3DEvents& ev) {
  auto& I = *impl_;
  r.sampler.validate();
  if (r.samples < 1 || r.samples > 64) throw Error("--samples must be within 1..64", "--samples " + std::to_string(r.samples));
  auto t0 = std::chrono::steady_clock::now();
  if (ev.stage) ev.stage("text encoder", 0);
  const auto ctx = I.text->encode({r.prompt, r.negative_prompt});
  const int64_t L = I.text->context_length(), W = I.text->width();
  const std::span<const float> all(ctx);
  I.flow->set_context(all.subspan(0, size_t(L * W)), all.subspan(size_t(L * W), size_t(L * W)), L);
  times_.text_s = since(t0);
  FlowSampler sampler(*I.flow);
  std::vector<TextTo3DSample> out;
  const size_t n = size_t(I.flow_config.in_channels * I.flow_config.tokens());
  for (int s = 0; s < r.samples; s++) {
    t0 = std::chrono::steady_clock::now();
    if (ev.stage) ev.stage("ss-flow", s);
    auto latent = sampler.sample(gaussian_noise(r.seed + uint64_t(s), n), r.sampler, [&](const StepReport& step) {
      if (ev.step) ev.step(step, s);
    });
    times_.flow_s += since(t0);
    t0 = std::chrono::steady_clock::now();
    if (ev.stage) ev.stage("ss-decoder", s);
    TextTo3DSample smp;
    smp.logits = I.decoder->decode(latent);
    smp.extent = I.decoder->output_extent();
    for (float v : smp.logits) smp.occupied += v > 0;
    times_.decode_s += since(t0);
    out.push_back(std::move(smp));
  }
  return out;
}

}  // namespace ember::trellis
