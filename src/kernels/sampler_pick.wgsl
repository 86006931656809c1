// Sampler stage 2, one workgroup: merges the P partials of sampler_partials.wgsl and writes the
// chosen id to tokens[out_slot] (where the next step's embedding lookup reads it).
//   greedy: the best candidate (ties -> lowest id).
//   sample: the best K candidates (found without sorting all P * K: each partial's list is
//           sorted, so a bisection on the K-th best key counts with one binary search per list,
//           then only the lists' heads above it are gathered and sorted), then temperature, top-k, top-p, min-p (HF semantics, applied
//           to the candidates) and one draw u = rng(seed, step) from the renormalised distribution.
override WG: u32 = 256u;
override K: u32 = 64u;
override SORTN: u32 = 512u;
override P: u32 = 256u;  // partials written by stage 1

#include "sampler_common.wgsl"
#include "sampler_top_k.wgsl"

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> sp: SamplerParams;

#if EMBED
#include "sampler_embed.wgsl"
#endif

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
#if EMBED
  embed_next(b.id, li);
#endif
}

// Order-preserving map of f32 to u32 (larger float, larger key).
fn key_of(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// How many entries of partial list `list` (sorted, best first) have a key >= threshold.
fn count_at_least(list: u32, threshold: u32) -> u32 {
  var lo = 0u;
  var hi = K;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (key_of(partials[(list * K + mid) * 2u]) >= threshold) { lo = mid + 1u; } else { hi = mid; }
  }
  return lo;
}

var<workgroup> counter: atomic<u32>;

fn count_all(li: u32, threshold: u32) -> u32 {
  var c = 0u;
  for (var list = li; list < P; list += WG) { c += count_at_least(list, threshold); }
  atomicAdd(&counter, c);
  let total = workgroupUniformLoad(&counter);  // includes a barrier
  if (li == 0u) { atomicStore(&counter, 0u); }
  workgroupBarrier();
  return total;
}

fn copy_entry(list: u32, j: u32, slot: u32) {
  sv[slot] = partials[(list * K + j) * 2u];
  si[slot] = bitcast<u32>(partials[(list * K + j) * 2u + 1u]);
}

// The best K of the P sorted lists into sv/si[0..K), sorted.
fn merge_partials(li: u32) {
  if (li == 0u) { atomicStore(&counter, 0u); }
  workgroupBarrier();
  // Largest threshold with at least K keys at or above it: the K-th best key.
  var threshold = 0u;
  for (var bit = 31i; bit >= 0i; bit--) {
    let trial = threshold | (1u << u32(bit));
    if (count_all(li, trial) >= K) { threshold = trial; }
  }
  for (var i = li; i < SORTN; i += WG) {
    sv[i] = NEG;
    si[i] = NO_ID;
  }
  workgroupBarrier();
  // Gather the entries above the threshold (fewer than K, so they fit), then those equal to it
  // while there is room (more than K only on ties, e.g. the padding of a small vocabulary).
  for (var list = li; list < P; list += WG) {
    let n = select(count_at_least(list, threshold + 1u), 0u, threshold == 0xffffffffu);
    let at = atomicAdd(&counter, n);
    for (var j = 0u; j < n; j++) { copy_entry(list, j, at + j); }
  }
  workgroupBarrier();
  for (var list = li; list < P; list += WG) {
    let first = select(count_at_least(list, threshold + 1u), 0u, threshold == 0xffffffffu);
    let n = count_at_least(list, threshold) - first;
    let at = atomicAdd(&counter, n);
    for (var j = 0u; j < n && at + j < SORTN; j++) { copy_entry(list, first + j, at + j); }
  }
  workgroupBarrier();
  sort_desc(li);
}

var<workgroup> chosen: u32;

@compute @workgroup_size(WG)
fn sample(@builtin(local_invocation_index) li: u32) {
  merge_partials(li);
  if (li == 0u) {
    let id = draw();
    tokens[sp.out_slot] = id;
    chosen = id;
  }
#if EMBED
  embed_next(workgroupUniformLoad(&chosen), li);
#endif
}

// The sampling pick's choice among the merged candidates in sv/si (lane 0 alone).
fn draw() -> u32 {
  var n = select(K, min(sp.top_k, K), sp.top_k > 0u);
  for (var i = 0u; i < n; i++) {
    if (si[i] == NO_ID) {
      n = i;
      break;
    }
  }
  if (sp.temperature <= 0.0 || n <= 1u) { return si[0]; }
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
  var cum = 0.0;
  for (var i = 0u; i < n; i++) {
    cum += sv[i];
    if (cum > threshold) { return si[i]; }
  }
  return si[n - 1u];
}
