// Shared by the sampler stages: the per-step parameters (mirrors SamplerParams in sampler.h), the
// candidate order (higher logit first, ties to the lower id), the candidates' workgroup memory and
// a workgroup argmax. The including file declares the overrides WG and SORTN (powers of two,
// SORTN >= WG).

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
