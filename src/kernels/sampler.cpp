#include "kernels/sampler.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {

Sampler::Sampler(gpu::KernelCache& kernels, const SamplerConfig& config) : kernels_(kernels), config_(config) {
  const auto& c = config_;
  auto pow2 = [](uint32_t v) { return v && (v & (v - 1)) == 0; };
  if (c.vocab == 0 || c.partials == 0 || c.max_top_k == 0) throw Error("vocab, partials and max_top_k must be positive", "Sampler");
  if (!pow2(c.workgroup) || c.workgroup > 1024 || !pow2(c.sort_size) || c.sort_size < 2 * c.max_top_k ||
      c.sort_size < c.workgroup)
    throw Error("sort_size and workgroup must be powers of two with sort_size >= 2 * max_top_k and >= workgroup",
                "Sampler", "e.g. max_top_k 64, sort_size 512, workgroup 256");
  if (c.partials > c.vocab) throw Error("more partials than vocabulary entries", "Sampler", "use fewer partials");
  const double wg = c.workgroup, k = c.max_top_k, n = c.sort_size;
  const std::vector<std::pair<std::string, double>> stage1 = {{"WG", wg}, {"K", k}, {"SORTN", n}, {"WMAX", double(c.window_max)}};
  const std::vector<std::pair<std::string, double>> stage2 = {{"WG", wg}, {"K", k}, {"SORTN", n}, {"P", double(c.partials)}};
  topk_partials_ = &kernels.get({.file = "sampler_partials.wgsl", .entry = "topk", .constants = stage1});
  gpu::KernelKey pick{.file = "sampler_pick.wgsl", .constants = stage2};
  if (c.embed_rows) {
    if (c.embed_cols == 0 || c.embed_cols % 32 != 0)
      throw Error("embedding width " + std::to_string(c.embed_cols) + " is not supported", "Sampler", "a positive multiple of 32");
    pick.defines.insert("EMBED");
    if (c.embed_asymmetric) pick.defines.insert("ASYMMETRIC");
    pick.constants.push_back({"ROWS", double(c.embed_rows)});
    pick.constants.push_back({"COLS", double(c.embed_cols)});
  }
  pick.entry = "sample";
  sample_pick_ = &kernels.get(pick);
  partials_ = kernels.device().create_storage(uint64_t(c.partials) * c.max_top_k * 8, "sampler partials");
  if (c.one_dispatch_greedy) {
    if (c.vocab >= (1u << 30) - 1) throw Error("a vocabulary of 2^30 - 1 ids or more", "Sampler", "sample greedily in two dispatches");
    gpu::KernelKey one{.file = "sampler_greedy.wgsl", .entry = "greedy", .defines = pick.defines,
                       .constants = {{"WG", wg}, {"SORTN", wg}, {"WMAX", double(c.window_max)}, {"P", double(c.partials)}}};
    for (const auto& kv : pick.constants)
      if (kv.first == "ROWS" || kv.first == "COLS") one.constants.push_back(kv);
    greedy_ = &kernels.get(one);
    // Zeroed, as a fresh use expects: the counter at 0 and every id's tag stale.
    tagged_ = kernels.device().create_storage((2 * uint64_t(c.partials) + 3) * 4, "sampler one-dispatch greedy");
    status_ = {&tagged_, status_offset(),
               "the one-dispatch greedy sampler (sampler_greedy.wgsl) gave up waiting for a partial, so the id it picked is wrong",
               "report the GPU and driver (ember devices): its atomics did not become visible"};

  } else {
    greedy_ = &kernels.get({.file = "sampler_partials.wgsl", .entry = "greedy", .constants = stage1});
    pick.entry = "greedy";
    greedy_pick_ = &kernels.get(pick);
  }
}

uint32_t Sampler::storage_buffers(const SamplerConfig& c) {
  const uint32_t pick = 3 + (c.embed_rows ? 4 + (c.embed_asymmetric ? 1 : 0) : 0);
  return std::max<uint32_t>(4, pick + (c.one_dispatch_greedy ? 1 : 0));
}

uint64_t Sampler::status_offset() const { return (2 * uint64_t(config_.partials) + 1) * 4; }

bool Sampler::gave_up() const { return tagged_ && kernels_.device().download_as<uint32_t>(tagged_, status_offset(), 1)[0] != 0; }

void Sampler::stall_for_tests(bool stall) const {
  if (!tagged_) return;
  const uint32_t word = stall ? 1 : 0;
  kernels_.device().upload(tagged_, std::span<const uint32_t>(&word, 1), status_offset() + 4);
}

Sampler::Groups Sampler::bind(gpu::Binding logits, gpu::Binding tokens, gpu::Binding params, const PickEmbedding* embed) const {
  const auto& c = config_;
  if ((embed != nullptr) != (c.embed_rows != 0))
    throw Error(embed ? "an embedding target for a sampler that does not embed" : "no embedding target for a sampler that embeds", "Sampler",
                "give bind an embedding exactly when SamplerConfig::embed_rows is set");
  gpu::Binding partials{&partials_};
  // The greedy stage reads only P pairs, so bind just that prefix of the shared scratch buffer.
  gpu::Binding greedy{&partials_, 0, uint64_t(c.partials) * 8};
  std::vector<gpu::Binding> greedy_pick{greedy, tokens, params}, sample_pick{partials, tokens, params};
  if (embed) {
    check_q4_matrix(embed->table, c.embed_rows, c.embed_cols, c.embed_asymmetric, "Sampler embedding");
    require_binding(embed->out, uint64_t(c.embed_cols) * 4, "embedding out", "Sampler");
    require_binding(embed->step, sizeof(StepParams), "step", "Sampler");
    std::vector<gpu::Binding> more{embed->table.quant, embed->table.scales, embed->out, embed->step};
    if (c.embed_asymmetric) more.push_back(embed->table.zero_points);
    greedy_pick.insert(greedy_pick.end(), more.begin(), more.end());
    sample_pick.insert(sample_pick.end(), more.begin(), more.end());
  }
  Groups groups{.topk_partials = kernels_.bind(*topk_partials_, {logits, tokens, partials, params}),
                .sample_pick = kernels_.bind(*sample_pick_, sample_pick)};
  if (c.one_dispatch_greedy) {
    greedy_pick[0] = {&tagged_};
    greedy_pick.push_back(logits);  // its last binding
    groups.greedy = kernels_.bind(*greedy_, greedy_pick);
  } else {
    groups.greedy = kernels_.bind(*greedy_, {logits, tokens, greedy, params});
    groups.greedy_pick = kernels_.bind(*greedy_pick_, greedy_pick);
  }
  return groups;
}

void Sampler::record_greedy(gpu::Recorder& rec, const Groups& groups) const {
  rec.dispatch(*greedy_, groups.greedy, checked_groups(kernels_.device(), config_.partials, "Sampler"));
  if (greedy_pick_) rec.dispatch(*greedy_pick_, groups.greedy_pick, 1);
  if (tagged_) {
    status_.buffer = &tagged_;  // (the sampler may have moved since it was built)
    rec.watch(status_);
  }
}

void Sampler::record_sample(gpu::Recorder& rec, const Groups& groups) const {
  rec.dispatch(*topk_partials_, groups.topk_partials, checked_groups(kernels_.device(), config_.partials, "Sampler"));
  rec.dispatch(*sample_pick_, groups.sample_pick, 1);
}

void upload_params(const gpu::Device& device, const gpu::Buffer& buffer, const SamplerParams& params) {
  device.upload(buffer, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&params), sizeof params));
}

}  // namespace ember::kernels
