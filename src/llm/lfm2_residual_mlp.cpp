// The one-dispatch residual MLP in an Lfm2Model's decode graph (residual_mlp_q4.wgsl): a layer's
// out projection, ffn norm and MLP as one dispatch where the candidate's residualMlpWorkgroups asks
// for it and a probe shows its grid resident on this device.
#include <optional>

#include "common/error.h"
#include "kernels/step.h"
#include "llm/lfm2_model_parts.h"

namespace ember::llm {

using formats::LayerType;

namespace {
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
}  // namespace

void Lfm2Model::build_residual_mlp() {
  const auto& s = shape();
  const uint32_t H = u32(s.hidden), F = u32(s.ffn);
  auto off = [&](const std::string& why) {
    choices_.warnings.push_back("residualMlpWorkgroups " + std::to_string(choices_.residual_mlp_workgroups) + ": " + why +
                                "; decode runs the out projection and the MLP as separate dispatches");
    choices_.residual_mlp_workgroups = 0;
    ops_->residual_mlp.clear();
  };
  if (choices_.mlp_pair || !choices_.norm_fuse) return off("needs the unfused MLP path with normFuse");
  kernels::ResidualMlpConfig rc{
      .hidden = H, .ffn = F, .workgroups = choices_.residual_mlp_workgroups, .eps = static_cast<float>(s.eps()), .prefetch = choices_.prefetch};
  // What layer i's grid reads ahead: the next layer's mix-in matvec, unless it starts another weights
  // buffer; after the last layer nothing (reading the head's first rows ahead measured slower).
  auto next_of = [&](size_t i) -> const kernels::Q4Matrix* {
    if (!rc.prefetch || i + 1 == layers_.size()) return nullptr;
    const kernels::Q4Matrix& next = layers_[i + 1].mix_in;
    return next.quant.buffer == layers_[i].down.quant.buffer && next.scales.buffer == next.quant.buffer ? &next : nullptr;
  };
  try {
    for (const Layer& l : layers_) {
      rc.proj_cols = l.mix_out.cols;
      if (!ops_->residual_mlp.count(rc.proj_cols)) ops_->residual_mlp.emplace(rc.proj_cols, kernels::ResidualMlpQ4(kernels_, rc));
    }
  } catch (const Error& e) {
    return off(e.what());
  }
  // Per layer: its own tagged words (each written once per step), 256-byte aligned; after the
  // last layer the status word all layers share, so that one copy reads it with a step's ids.
  const kernels::ResidualMlpQ4& any = ops_->residual_mlp.begin()->second;
  residual_stride_ = (any.scratch_bytes() + 255) / 256 * 256;
  residual_status_offset_ = any.status_offset();
  const uint64_t shared_status = residual_stride_ * layers_.size();
  residual_scratch_ = device_.create_storage(shared_status + 4, "decode.residual_mlp.scratch");
  auto bind = [&](size_t i, gpu::Binding x, gpu::Binding scratch, gpu::Binding step, std::optional<uint64_t> status_at) {
    const Layer& l = layers_[i];
    return ops_->residual_mlp.at(l.mix_out.cols)
        .bind(l.mix_out, l.gate_up, l.down, l.type == LayerType::Attention ? gpu::Binding{&attn_} : gpu::Binding{&conv_y_}, x,
              weights_->section(l.prefix + "mlp.gate_up.norm"), scratch, step, next_of(i), status_at);
  };
  std::vector<kernels::Bound> bound;
  try {
    for (size_t i = 0; i < layers_.size(); i++) {
      const uint64_t at = residual_stride_ * i;  // layer i's words; its binding reaches the shared status word
      bound.push_back(bind(i, {&x_, 0, uint64_t(H) * 4}, {&residual_scratch_, at, shared_status + 4 - at}, {&step_}, shared_status - at));
    }
  } catch (const Error& e) {  // a layer's matrices in two weights buffers (a pack larger than one binding may span)
    return off(e.what());
  }
  // The probe: one step of layer 0 on scratch of its own, waiting for its words at decode_step 1.
  // A grid the device cannot hold at once gives up its waits and sets the status word.
  gpu::Buffer probe_scratch = device_.create_storage(residual_stride_, "residual_mlp.probe.scratch");
  gpu::Buffer probe_step = kernels::create_step_buffer(device_, "residual_mlp.probe.step");
  kernels::upload_step(device_, probe_step, kernels::StepParams{.decode_step = 1});
  kernels::Bound probe = bind(0, {&h_}, {&probe_scratch}, {&probe_step}, std::nullopt);
  gpu::Recorder rec(device_);
  ops_->residual_mlp.at(layers_.front().mix_out.cols).record(rec, probe);
  rec.submit();
  if (device_.download_as<uint32_t>(probe_scratch, residual_status_offset_, 1)[0] != 0)
    return off("its " + std::to_string(choices_.residual_mlp_workgroups) + " workgroups do not all run at once on this device");
  for (size_t i = 0; i < layers_.size(); i++) layers_[i].residual_mlp = std::move(bound[i]);
  residual_mlp_ = true;
  residual_status_ = {&residual_scratch_, shared_status,
                      "a wait of the one-dispatch residual MLP (residual_mlp_q4, " + std::to_string(choices_.residual_mlp_workgroups) +
                          " workgroups) gave up: its workgroups did not all run at once on this device, so the logits and tokens of "
                          "this decode are wrong",
                      "lower or remove residualMlpWorkgroups in the pack's runtime.json (ember tune measures it again); until then "
                      "this model cannot decode on this device"};
}

bool Lfm2Model::residual_mlp_failed() const {
  if (!residual_mlp_) return false;
  return device_.download_as<uint32_t>(residual_scratch_, residual_status_.offset, 1)[0] != 0;
}

void Lfm2Model::stall_for_tests(bool stall) const {
  for (size_t i = 0; i < layers_.size() && residual_mlp_; i++)
    ops_->residual_mlp.at(layers_[i].mix_out.cols).stall_for_tests({&residual_scratch_, residual_stride_ * i, residual_stride_}, stall);
}

}  // namespace ember::llm
