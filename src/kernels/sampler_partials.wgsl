// Sampler stage 1: workgroup x of P (the dispatch size) scans logits [x * chunk, (x + 1) * chunk),
// chunk = ceil(vocab / P), applying the repetition penalty (HF semantics: a recent id's logit is
// divided by the penalty when positive, multiplied when negative), and keeps its best candidates:
//   greedy: the best one -> partials[x * 2 ..] = (logit, bitcast id)
//   topk:   the best K, sorted -> partials[(x * K + i) * 2 ..]
override WG: u32 = 256u;     // power of two
override K: u32 = 64u;       // candidates kept per partial (bounds top_k)
override SORTN: u32 = 512u;  // sort buffer, power of two >= 2 K and >= WG
override WMAX: u32 = 256u;   // recent ids considered (window_len is clamped to it)

#include "sampler_common.wgsl"

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
@group(0) @binding(3) var<storage, read> sp: SamplerParams;

var<workgroup> window: array<u32, WMAX>;
var<workgroup> slice_begin: u32;

fn load_window(li: u32) -> u32 {
  let n = select(0u, min(sp.window_len, WMAX), sp.repetition_penalty != 1.0);
  for (var i = li; i < n; i += WG) { window[i] = tokens[sp.window_start + i]; }
  workgroupBarrier();
  return n;
}

fn penalized(id: u32, n: u32) -> f32 {
  var v = logits[id];
  for (var i = 0u; i < n; i++) {
    if (window[i] == id) {
      v = select(v / sp.repetition_penalty, v * sp.repetition_penalty, v < 0.0);
      break;
    }
  }
  return v;
}

var<private> window_n: u32;

fn load_candidate(i: u32) -> Cand {
  let id = slice_begin + i;
  return Cand(penalized(id, window_n), id);
}

fn slice(x: u32, groups: u32) -> vec2<u32> {
  let chunk = (sp.vocab + groups - 1u) / groups;
  let begin = min(sp.vocab, x * chunk);
  return vec2<u32>(begin, min(sp.vocab, begin + chunk));
}

@compute @workgroup_size(WG)
fn greedy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) li: u32) {
  let n = load_window(li);
  let range = slice(wg.x, groups.x);
  var best = Cand(NEG, NO_ID);
  for (var id = range.x + li; id < range.y; id += WG) {
    let v = penalized(id, n);
    if (better(v, id, best.v, best.id)) { best = Cand(v, id); }
  }
  let b = best_of_workgroup(li, best);
  if (li == 0u) {
    partials[wg.x * 2u] = b.v;
    partials[wg.x * 2u + 1u] = bitcast<f32>(b.id);
  }
}

@compute @workgroup_size(WG)
fn topk(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  window_n = load_window(li);
  let range = slice(wg.x, groups.x);
  if (li == 0u) { slice_begin = range.x; }
  workgroupBarrier();
  select_top(li, range.y - range.x);
  for (var i = li; i < K; i += WG) {
    partials[(wg.x * K + i) * 2u] = sv[i];
    partials[(wg.x * K + i) * 2u + 1u] = bitcast<f32>(si[i]);
  }
}
