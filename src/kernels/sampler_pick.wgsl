// Sampler stage 2, one workgroup: merges the P partials of sampler_partials.wgsl and writes the
// chosen id to tokens[out_slot] (where the next step's embedding lookup reads it).
//   greedy: the best candidate (ties -> lowest id).
//   sample: the best K candidates, then temperature, top-k, top-p, min-p (HF semantics, applied
//           to the candidates) and one draw u = rng(seed, step) from the renormalised distribution.
override WG: u32 = 256u;
override K: u32 = 64u;
override SORTN: u32 = 512u;
override P: u32 = 256u;  // partials written by stage 1

#include "sampler_common.wgsl"

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> sp: SamplerParams;

fn load_candidate(i: u32) -> Cand {
  return Cand(partials[i * 2u], bitcast<u32>(partials[i * 2u + 1u]));
}

// PCG hash (O'Neill's RXS-M-XS output on one LCG step): a counter-based RNG, no state kept.
fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

fn uniform01(seed: u32, step: u32) -> f32 {
  return f32(pcg(pcg(seed) ^ step) >> 8u) * (1.0 / 16777216.0);
}

@compute @workgroup_size(WG)
fn greedy(@builtin(local_invocation_index) li: u32) {
  var best = Cand(NEG, NO_ID);
  for (var i = li; i < P; i += WG) {
    let c = load_candidate(i);
    if (better(c.v, c.id, best.v, best.id)) { best = c; }
  }
  let b = best_of_workgroup(li, best);
  if (li == 0u) { tokens[sp.out_slot] = b.id; }
}

@compute @workgroup_size(WG)
fn sample(@builtin(local_invocation_index) li: u32) {
  select_top(li, P * K);
  if (li != 0u) { return; }
  var n = select(K, min(sp.top_k, K), sp.top_k > 0u);
  for (var i = 0u; i < n; i++) {
    if (si[i] == NO_ID) {
      n = i;
      break;
    }
  }
  if (sp.temperature <= 0.0 || n <= 1u) {
    tokens[sp.out_slot] = si[0];
    return;
  }
  // Weights relative to the best: w_0 = 1, so min-p compares w_i with min_p directly.
  let m = sv[0];
  var total = 0.0;
  for (var i = 0u; i < n; i++) {
    let w = exp((sv[i] - m) / sp.temperature);
    sv[i] = w;
    total += w;
  }
  // top-p keeps candidate i while the mass before it is below top_p (at least one).
  if (sp.top_p < 1.0) {
    var before = 0.0;
    var keep = 1u;
    for (var i = 1u; i < n; i++) {
      before += sv[i - 1u];
      if (before >= sp.top_p * total) { break; }
      keep = i + 1u;
    }
    n = keep;
  }
  if (sp.min_p > 0.0) {
    var keep = 1u;
    for (var i = 1u; i < n; i++) {
      if (sv[i] >= sp.min_p) { keep = i + 1u; }
    }
    n = keep;
  }
  var kept = 0.0;
  for (var i = 0u; i < n; i++) { kept += sv[i]; }
  let threshold = uniform01(sp.seed, sp.step) * kept;
  var chosen = si[n - 1u];
  var cum = 0.0;
  for (var i = 0u; i < n; i++) {
    cum += sv[i];
    if (cum > threshold) {
      chosen = si[i];
      break;
    }
  }
  tokens[sp.out_slot] = chosen;
}
