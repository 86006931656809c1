// Log-probabilities of one row of logits (log-softmax over the first `vocab`), one workgroup:
// the sampled id's (tokens[slot], written by the sampler just before) and the best `top` ids'.
// Output u32 words: [0] the sampled id's logprob (f32 bits), [1] its id, then `top` (logprob bits,
// id) pairs, best first (ties to the lower id). Ids the logit edit masked come out near
// -3.4e38; the host drops them.
override WG: u32 = 256u;
const N: u32 = 20u;  // the largest `top` (Logprobs::kMaxTop)

struct Params {
  vocab: u32,
  slot: u32,
  top: u32,
  pad0: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> p: Params;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const LOWEST = -3.4e38;  // = logit_edit.wgsl's MASKED: a masked id is never above "nothing"
const NO_ID = 0xffffffffu;

var<workgroup> rv: array<f32, WG>;
var<workgroup> ri: array<u32, WG>;

fn better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return va > vb || (va == vb && ia < ib);
}

fn reduce_max(li: u32, v: f32) -> f32 {
  rv[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) { rv[li] = max(rv[li], rv[li + s]); }
    workgroupBarrier();
  }
  let r = rv[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum(li: u32, v: f32) -> f32 {
  rv[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) { rv[li] += rv[li + s]; }
    workgroupBarrier();
  }
  let r = rv[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32) {
  let vocab = p.vocab;
  var m = LOWEST;
  for (var id = li; id < vocab; id += WG) { m = max(m, logits[id]); }
  let gmax = reduce_max(li, m);
  var s = 0.0;
  for (var id = li; id < vocab; id += WG) { s += exp(logits[id] - gmax); }
  let lse = gmax + log(reduce_sum(li, s));
  if (li == 0u) {
    let sampled = tokens[p.slot];
    out[0] = bitcast<u32>(select(LOWEST, logits[min(sampled, vocab - 1u)] - lse, sampled < vocab));
    out[1] = sampled;
  }
  let top = min(p.top, N);
  // Each lane's best `top` of its ids, sorted; then `top` rounds of a workgroup argmax over the
  // lanes' heads.
  var lv: array<f32, N>;
  var lid: array<u32, N>;
  var count = 0u;
  if (top > 0u) {
    for (var id = li; id < vocab; id += WG) {
      let v = logits[id];
      if (count == top && !better(v, id, lv[top - 1u], lid[top - 1u])) { continue; }
      var j = min(count, top - 1u);
      while (j > 0u && better(v, id, lv[j - 1u], lid[j - 1u])) {
        lv[j] = lv[j - 1u];
        lid[j] = lid[j - 1u];
        j--;
      }
      lv[j] = v;
      lid[j] = id;
      count = min(count + 1u, top);
    }
  }
  var head = 0u;
  for (var r = 0u; r < top; r++) {
    var v = LOWEST;
    var i = NO_ID;
    if (head < count) {
      v = lv[head];
      i = lid[head];
    }
    rv[li] = v;
    ri[li] = i;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
      if (li < st && better(rv[li + st], ri[li + st], rv[li], ri[li])) {
        rv[li] = rv[li + st];
        ri[li] = ri[li + st];
      }
      workgroupBarrier();
    }
    let wi = ri[0];
    let wv = rv[0];
    workgroupBarrier();
    if (head < count && i == wi) { head++; }
    if (li == 0u) {
      out[2u + 2u * r] = bitcast<u32>(select(LOWEST, wv - lse, wi != NO_ID));
      out[3u + 2u * r] = wi;
    }
  }
}
