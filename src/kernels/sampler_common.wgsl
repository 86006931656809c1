// Shared by the two sampler stages: the per-step parameters (mirrors SamplerParams in sampler.h),
// the candidate order (higher logit first, ties to the lower id) and a chunked top-K selection by
// bitonic sort in workgroup memory. The including file declares
//   fn load_candidate(i: u32) -> Cand
// and the overrides WG, K (candidates kept) and SORTN (power of two, >= 2 K).

struct SamplerParams {
  vocab: u32,
  temperature: f32,         // <= 0 means greedy in the sampling pick as well
  top_k: u32,               // 0 = K (the compiled bound)
  top_p: f32,               // 1 = off
  min_p: f32,               // 0 = off
  repetition_penalty: f32,  // 1 = off
  window_start: u32,        // recent ids: tokens[window_start .. window_start + window_len)
  window_len: u32,
  seed: u32,
  step: u32,                // RNG counter: the draw is a function of (seed, step) only
  out_slot: u32,            // the sampled id goes to tokens[out_slot]
  pad0: u32,
}

struct Cand {
  v: f32,
  id: u32,
}

const NO_ID = 0xffffffffu;
const NEG = -3.0e38;

fn better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return va > vb || (va == vb && ia < ib);
}

var<workgroup> sv: array<f32, SORTN>;
var<workgroup> si: array<u32, SORTN>;

// Sorts sv/si descending (better first).
fn sort_desc(li: u32) {
  for (var k = 2u; k <= SORTN; k <<= 1u) {
    for (var j = k >> 1u; j > 0u; j >>= 1u) {
      for (var i = li; i < SORTN; i += WG) {
        let l = i ^ j;
        if (l > i) {
          let desc = (i & k) == 0u;
          let swap = select(better(sv[i], si[i], sv[l], si[l]), better(sv[l], si[l], sv[i], si[i]), desc);
          if (swap) {
            let tv = sv[i];
            sv[i] = sv[l];
            sv[l] = tv;
            let ti = si[i];
            si[i] = si[l];
            si[l] = ti;
          }
        }
      }
      workgroupBarrier();
    }
  }
}

// Leaves the best K of candidates 0..count-1, sorted, in sv/si[0..K): each round refills the
// slots after the K kept so far and sorts again.
fn select_top(li: u32, count: u32) {
  for (var i = li; i < SORTN; i += WG) {
    sv[i] = NEG;
    si[i] = NO_ID;
  }
  workgroupBarrier();
  let fresh = SORTN - K;
  for (var base = 0u; base < count; base += fresh) {
    for (var i = li; i < fresh; i += WG) {
      var c = Cand(NEG, NO_ID);
      if (base + i < count) { c = load_candidate(base + i); }
      sv[K + i] = c.v;
      si[K + i] = c.id;
    }
    workgroupBarrier();
    sort_desc(li);
  }
}

// Workgroup argmax over one candidate per invocation (WG a power of two, SORTN >= WG).
fn best_of_workgroup(li: u32, c: Cand) -> Cand {
  sv[li] = c.v;
  si[li] = c.id;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (li < stride && better(sv[li + stride], si[li + stride], sv[li], si[li])) {
      sv[li] = sv[li + stride];
      si[li] = si[li + stride];
    }
    workgroupBarrier();
  }
  return Cand(sv[0], si[0]);
}
