#include "llm/kernel_choice.h"

#include <algorithm>

#include "kernels/attention.h"
#include "llm/cpu_kernel_defaults.h"

namespace ember::llm {
namespace {

const char* kShapes[] = {"attn_qkv", "attn_o_proj", "conv_in_proj", "conv_out_proj", "mlp_gate_up", "mlp_down", "head"};

kernels::MatvecGeometry to_geometry(const formats::Geometry& g) {
  kernels::MatvecGeometry m;
  m.workgroup_size = static_cast<uint32_t>(g.workgroup_size);
  m.subgroup_size = static_cast<uint32_t>(g.subgroup_size);
  m.rows_per_subgroup = static_cast<uint32_t>(g.rows_per_subgroup);
  m.subgroups_per_row = static_cast<uint32_t>(g.subgroups_per_row);
  return m;
}

// A geometry every adapter runs: 256 threads, lane groups of the device's subgroup size.
kernels::MatvecGeometry safe_geometry(const gpu::Device& device) {
  kernels::MatvecGeometry g;
  g.workgroup_size = 256;
  g.subgroup_size = std::max<uint32_t>(4, std::min<uint32_t>(32, device.subgroup_size()));
  g.rows_per_subgroup = 1;
  g.subgroups_per_row = 1;
  return g;
}

}  // namespace

kernels::MatvecGeometry cpu_matvec_geometry(const gpu::Device& device) {
  const uint32_t lanes = std::max<uint32_t>(4, std::min<uint32_t>(32, device.subgroup_size()));
  kernels::MatvecGeometry g;
  g.workgroup_size = lanes;
  g.subgroup_size = lanes;
  g.rows_per_subgroup = std::min<uint32_t>(8, lanes);
  g.subgroups_per_row = 1;
  return g;
}

kernels::MatmulGeometry cpu_matmul_geometry() {
  kernels::MatmulGeometry g;
  g.wg_tokens = 4;
  g.wg_rows = 32;
  g.k_step = 16;
  g.micro = 4;
  return g;
}

bool cpu_defaults(const formats::LlmPack& pack, const gpu::Device& device) {
  if (device.adapter().type != "CPU") return false;
  const auto& extra = pack.candidate().extra;
  auto it = extra.find("adapter");
  return it != extra.end() && it->is_string() && it->get<std::string>() != device.adapter().name();
}

namespace {

bool fits(const kernels::MatvecGeometry& g, const gpu::Device& device) {
  auto pow2 = [](uint32_t v) { return v && !(v & (v - 1)); };
  uint32_t lanes = g.subgroup_size * g.subgroups_per_row;
  return g.workgroup_size >= 1 && g.workgroup_size <= device.limits().maxComputeInvocationsPerWorkgroup &&
         pow2(g.subgroup_size) && lanes && g.workgroup_size % lanes == 0 && g.rows_per_subgroup >= 1 && g.rows_per_subgroup <= 8;
}

}  // namespace

uint32_t KernelChoices::blocks_for(uint32_t length) const {
  uint32_t blocks = flash_blocks;
  for (const auto& o : flash_optima) {
    blocks = static_cast<uint32_t>(o.blocks);
    if (length <= o.positions) break;
  }
  return std::clamp<uint32_t>(blocks, 1, std::max<uint32_t>(1, length));
}

const KernelChoices::Matvec& KernelChoices::matvec_for(const std::string& shape_key) const { return matvec.at(shape_key); }

kernels::MatmulGeometry KernelChoices::matmul_for(const std::string& shape_key, uint32_t rows, uint32_t tokens) const {
  auto it = matmul.find(shape_key);
  if (it != matmul.end()) return it->second;
  kernels::MatmulGeometry g;
  // Too few workgroups leave most of a large GPU idle (a 1024 x 1024 output at 128 x 128 tiles
  // is 64 workgroups); 4x4 per thread quadruples them.
  const uint64_t groups = ((uint64_t(rows) + g.tile_rows() - 1) / g.tile_rows()) * ((uint64_t(tokens) + g.tile_tokens() - 1) / g.tile_tokens());
  if (groups < 128) g.micro = 4;
  return g;
}

KernelChoices choose_kernels(const formats::LlmPack& pack, const gpu::Device& device) {
  KernelChoices k;
  const auto& rt = pack.runtime();
  const auto& c = pack.candidate();
  const auto& adapter = device.adapter();
  // `ember tune` records the adapter it measured on (candidate.adapter).
  std::string tuned_on;
  if (auto it = c.extra.find("adapter"); it != c.extra.end() && it->is_string()) tuned_on = it->get<std::string>();
  const std::string tuned_for = tuned_on.empty() ? "" : " on " + tuned_on;
  bool subgroup_ok = true;
  if (rt.expected_subgroup_size != 0 &&
      (rt.expected_subgroup_size < adapter.subgroup_min || rt.expected_subgroup_size > adapter.subgroup_max)) {
    subgroup_ok = false;
    k.warnings.push_back("the pack's candidate was tuned" + tuned_for + " for subgroup size " + std::to_string(rt.expected_subgroup_size) +
                         " but this adapter (" + adapter.name() + ") has " + std::to_string(adapter.subgroup_min) +
                         "; using default kernel geometry (run `ember tune` to tune for this GPU)");
  } else if (!tuned_on.empty() && tuned_on != adapter.name()) {
    k.warnings.push_back("the pack's candidate was tuned on " + tuned_on + ", not on this adapter (" + adapter.name() + "); " +
                         (adapter.type == "CPU" ? "using the CPU adapter's defaults for its matvecs"
                                                : "its choices run here but may be slow") +
                         " (run `ember tune` to tune for this device)");
  }
  // A CPU adapter and a candidate tuned on another adapter: GPU geometries (wide workgroups,
  // reductions through workgroup memory) run an order of magnitude slower there than one SIMD-wide
  // workgroup per 8 rows (cpu_matvec_geometry), and a grid that waits on its own workgroups is not
  // resident on a few threads: every matvec gets the CPU geometry and the residual-MLP grid stays
  // off. The choices that define the model's weights (mlpPair) stay. A candidate tuned nowhere
  // (no adapter key) keeps the shapes it lists; the others get the CPU geometry, not the knee.
  const bool cpu = cpu_defaults(pack, device);
  const bool cpu_unlisted = adapter.type == "CPU" && tuned_on.empty();
  k.unfused = c.unfused;
  k.subgroups = device.has_subgroups();
  k.conv_fuse = c.conv_fuse || c.unfused;
  k.norm_fuse = !c.unfused;
  if (auto it = c.extra.find("normFuse"); it != c.extra.end() && it->is_boolean()) k.norm_fuse = k.norm_fuse && it->get<bool>();
  k.gated_gate_up = !c.unfused;
  k.conv_step_in_proj = !c.unfused;
  k.qk_fuse = !c.unfused;
  k.qk_in_attention = !c.unfused;
  if (auto it = c.extra.find("qkInAttention"); it != c.extra.end() && it->is_boolean()) k.qk_in_attention = !c.unfused && it->get<bool>();
  k.prefetch = !c.unfused && adapter.type != "CPU";
  if (auto it = c.extra.find("decodePrefetch"); it != c.extra.end() && it->is_boolean()) k.prefetch = !c.unfused && it->get<bool>();
  k.padding = static_cast<uint32_t>(std::max<int64_t>(0, c.padding));
  k.flash_optima = rt.flash_optima;
  k.flash_blocks = static_cast<uint32_t>(std::max<int64_t>(1, c.flash ? c.flash_blocks : 1));
  if (!c.flash) k.flash_optima.clear();
  if (auto it = c.extra.find("flashDirectWorkgroup"); it != c.extra.end()) {
    const int64_t w = it->is_number_integer() ? it->get<int64_t>() : -1;
    if (w > 0 && w <= UINT32_MAX && kernels::direct_workgroup_fits(uint32_t(w), kernels::AttentionConfig{}.workgroup, device))
      k.flash_direct_workgroup = static_cast<uint32_t>(w);
    else
      k.warnings.push_back("the candidate's flashDirectWorkgroup (" + it->dump() +
                           ") is not a power of two between 64 and this adapter's workgroup limit; using the default");
  }
  if (auto it = c.extra.find("residualMlpWorkgroups"); it != c.extra.end()) {
    const int64_t n = it->is_number_integer() ? it->get<int64_t>() : -1;
    if (n >= 0 && n <= device.limits().maxComputeWorkgroupsPerDimension) k.residual_mlp_workgroups = c.unfused || cpu ? 0 : static_cast<uint32_t>(n);
    else k.warnings.push_back("the candidate's residualMlpWorkgroups (" + it->dump() + ") is not a workgroup count; the fusion stays off");
  }
  // The fused MLP decides which down copy is the model: keep that choice whatever the geometry.
  k.mlp_pair = c.mlp_pair && !c.unfused;
  if (c.mlp_slices > 0) k.mlp_slices = static_cast<uint32_t>(c.mlp_slices);
  if (c.mlp_workgroup > 0) k.mlp_workgroup = std::min<uint32_t>(static_cast<uint32_t>(c.mlp_workgroup), device.limits().maxComputeInvocationsPerWorkgroup);
  // f16 arithmetic in the fused MLP, where the adapter has shader-f16 (else f32, as the seed's
  // format says). Its gate/up dot products stay f32 whatever mlpHalfDot says: in f16 they move the
  // logits past the reference tolerance (mlp_q4.wgsl).
  if (k.mlp_pair && c.mlp_half_product != "none") {
    if (c.mlp_half_product != "down")
      k.warnings.push_back("the candidate's mlpHalfProduct \"" + c.mlp_half_product + "\" is not \"down\" or \"none\"; the fused MLP runs in f32");
    else if (!device.has_f16())
      k.warnings.push_back("the candidate's mlpHalfProduct \"down\" needs shader-f16, which this adapter lacks; the fused MLP runs in f32");
    else k.mlp_half_product = true;
  }

  // Prefill matmul geometry per shape (candidate.prefillMatmul, written by `ember tune`).
  if (auto it = c.extra.find("prefillMatmul"); it != c.extra.end() && it->is_object()) {
    for (const auto& [shape, g] : it->items()) {
      kernels::MatmulGeometry mg;
      if (g.is_object())
        mg = {g.value("wgTokens", 0u), g.value("wgRows", 0u), g.value("kStep", 0u), g.value("micro", 8u), g.value("vec4", false),
              g.value("kSplits", 1u)};
      if (!g.is_object() || !kernels::matmul_geometry_fits(mg, device.limits()))
        k.warnings.push_back("the candidate's prefillMatmul geometry for " + shape + " cannot run on this adapter; using the default");
      else k.matmul[shape] = mg;
    }
  }

  // Prefill on a CPU adapter: a token tile of 16 (a short prompt wastes no lanes) and 128 rows per
  // workgroup of 128 threads, where the GPU default's 64- or 128-token tiles leave most lanes idle
  // on a short prompt and pay their barriers anyway.
  if (cpu || cpu_unlisted)
    for (const char* shape : kShapes)
      if (cpu || !k.matmul.count(shape)) k.matmul[shape] = cpu_matmul_geometry();

  kernels::Q4Variant default_variant = kernels::Q4Variant::carried;
  try {
    default_variant = kernels::parse_q4_variant(rt.dequant_variant);
  } catch (const std::exception&) {
    k.warnings.push_back("unknown dequantVariant '" + rt.dequant_variant + "'; using carried");
  }
  for (const char* shape : kShapes) {
    KernelChoices::Matvec m{default_variant, safe_geometry(device)};
    if (cpu || (cpu_unlisted && !c.matvec_for(shape))) {
      m = {kernels::Q4Variant::v3_both, cpu_matvec_geometry(device)};  // 16-byte loads: per-lane gathers cost per load
    } else if (subgroup_ok) {
      if (const formats::MatvecChoice* mc = c.matvec_for(shape)) {
        m.geometry = to_geometry(mc->geometry);
        try {
          m.variant = kernels::parse_q4_variant(mc->variant);
        } catch (const std::exception&) {
          k.warnings.push_back(std::string("unknown matvec variant '") + mc->variant + "' for " + shape + "; using " +
                               kernels::q4_variant_name(default_variant));
        }
      } else if (const formats::Geometry* g = rt.knee_for(shape)) {
        m.geometry = to_geometry(*g);
      }
      if (!fits(m.geometry, device)) {
        k.warnings.push_back(std::string("the candidate's geometry for ") + shape + " cannot run on this adapter; using defaults");
        m.geometry = safe_geometry(device);
      }
    }
    k.matvec[shape] = m;
  }
  return k;
}

}  // namespace ember::llm
