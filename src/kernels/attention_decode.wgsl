// Flash-decoding, stage 1: one query token against the KV cache, the cache split into B blocks
// (B = the dispatch's x size) processed in parallel. Workgroup (b, h) walks keys
// [b * chunk, min(L, (b + 1) * chunk)), chunk = ceil(L / B), L = step.start + 1, in tiles of WG keys
// with an online softmax, and writes its partial (max m, sum l, unnormalised sum of p * v) to
// partials[(h * B + b) * (head_dim + 2) ..]: [m, l, acc[0..head_dim)]. attention_combine.wgsl
// merges the blocks. GQA: query head h reads kv head h / (heads / kv_heads).
// Cache layout [positions][kv_heads][row] (kv_write.wgsl). Needs head_dim <= 4 * WG.
//   SUBGROUPS: scores by subgroup dot products, max/sum by subgroup reductions (reduce.wgsl);
//   otherwise one invocation per key and shared-memory trees.
//   DIRECT: one block (B = 1) needs no merge: binding 3 is the output [heads][head_dim] and
//   workgroup h writes acc / l there (no attention_combine dispatch).
// Several sequences (batched decode): grid z walks the entries of steps; sequence seq's query is
// row seq of q, its caches start at seq * seq_stride, its output (or partials) is row seq.
#if SUBGROUPS
enable subgroups;
#endif

#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;      // keys per tile; power of two
override MAXD: u32 = 64u;    // >= head_dim

#include "reduce.wgsl"

const DIMS_PER_THREAD = 4u;
const MASKED = -1.0e30;

var<workgroup> q_shared: array<f32, MAXD>;
var<workgroup> weights: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if !SUBGROUPS
  let sg_size = 1u;
#endif
  let D = p.head_dim;
  let h = wg.y;
  let blocks = groups.x;
  let kvh = h / (p.heads / p.kv_heads);
  let st = steps[wg.z];
  let L = st.start + 1u;
  let cache = st.seq * p.seq_stride;
  let chunk = (L + blocks - 1u) / blocks;
  let begin = min(L, wg.x * chunk);
  let end = min(L, begin + chunk);

  for (var i = li; i < D; i += WG) { q_shared[i] = q[st.seq * p.q_stride + p.q_offset + h * D + i]; }
  workgroupBarrier();

  var m = MASKED;
  var l = 0.0;
  var acc: array<f32, DIMS_PER_THREAD>;
  for (var tile = begin; tile < end; tile += WG) {
    let key = tile + li;
    var s = MASKED;
#if SUBGROUPS
    // One key per subgroup at a time: the lanes split the dims (coalesced loads), subgroupAdd sums.
    // The loop bound is uniform so every lane reaches subgroupAdd.
    let n_tile = min(WG, end - tile);
    let subgroups = WG / sg_size;
    for (var j0 = 0u; j0 < WG; j0 += subgroups) {
      let j = j0 + li / sg_size;
      var part = 0.0;
      if (j < n_tile) {
        let base = cache + ((tile + j) * p.kv_heads + kvh) * p.row;
        for (var i = li % sg_size; i < D; i += sg_size) { part += q_shared[i] * k_cache[base + i]; }
      }
      let dot = subgroupAdd(part);
      if (li % sg_size == 0u && j < WG) { weights[j] = dot * p.scale; }
    }
    workgroupBarrier();
    if (key < end) { s = weights[li]; }
#else
    if (key < end) {
      let base = cache + (key * p.kv_heads + kvh) * p.row;
      var dot = 0.0;
      for (var i = 0u; i < D; i++) { dot += q_shared[i] * k_cache[base + i]; }
      s = dot * p.scale;
    }
#endif
    let m_new = max(m, workgroup_max(s, li, sg_size));
    let alpha = exp(m - m_new);
    let w = select(0.0, exp(s - m_new), key < end);
    weights[li] = w;
    l = l * alpha + workgroup_sum(w, li, sg_size);  // its barrier also publishes weights[]
    m = m_new;
    let n = min(WG, end - tile);
    for (var k = 0u; k < DIMS_PER_THREAD; k++) {
      let d = li + k * WG;
      if (d < D) {
        var a = acc[k] * alpha;
        for (var j = 0u; j < n; j++) { a += weights[j] * v_cache[cache + ((tile + j) * p.kv_heads + kvh) * p.row + d]; }
        acc[k] = a;
      }
    }
    workgroupBarrier();  // weights[] is rewritten by the next tile
  }

#if DIRECT
  for (var k = 0u; k < DIMS_PER_THREAD; k++) {
    let d = li + k * WG;
    if (d < D) { partials[(st.seq * p.heads + h) * D + d] = acc[k] / l; }
  }
#else
  let out = ((st.seq * p.heads + h) * blocks + wg.x) * (D + 2u);
  if (li == 0u) {
    partials[out] = m;
    partials[out + 1u] = l;
  }
  for (var k = 0u; k < DIMS_PER_THREAD; k++) {
    let d = li + k * WG;
    if (d < D) { partials[out + 2u + d] = acc[k]; }
  }
#endif
}
