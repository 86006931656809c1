// Sampler stage 1: workgroup x of P (the dispatch size) scans logits [x * chunk, (x + 1) * chunk),
// chunk = ceil(vocab / P), applying the repetition penalty (sampler_window.wgsl), and keeps its
// best candidates:
//   greedy: the best one -> partials[x * 2 ..] = (logit, bitcast id)
//   topk:   the best K, sorted -> partials[(x * K + i) * 2 ..]
override WG: u32 = 256u;     // power of two
override K: u32 = 64u;       // candidates kept per partial (bounds top_k)
override SORTN: u32 = 512u;  // sort buffer, power of two >= 2 K and >= WG
override WMAX: u32 = 256u;   // recent ids considered (window_len is clamped to it)

#include "sampler_common.wgsl"
#include "sampler_top_k.wgsl"
#include "sampler_window.wgsl"

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
@group(0) @binding(3) var<storage, read> sp: SamplerParams;

var<workgroup> slice_begin: u32;

var<private> window_n: u32;

fn load_candidate(i: u32) -> Cand {
  let id = slice_begin + i;
  return Cand(penalized(id, window_n), id);
}

@compute @workgroup_size(WG)
fn greedy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) li: u32) {
  let n = load_window(li);
  let range = slice(wg.x, groups.x);
  let b = best_of_workgroup(li, best_in_slice(li, range, n));
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
