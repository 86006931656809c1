// Shared by the sampler stages that read logits (sampler_partials.wgsl, sampler_greedy.wgsl): the
// repetition window in workgroup memory, the penalized logit (HF semantics: a recent id's logit is
// divided by the penalty when positive, multiplied when negative) and workgroup x's slice of the
// vocabulary. The including file declares logits (f32), tokens (u32), sp (SamplerParams) and the
// overrides WG and WMAX.

var<workgroup> window: array<u32, WMAX>;

// Loads the recent ids (none without a penalty) and returns how many.
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

// Workgroup x of `groups` scans ids [x * chunk, (x + 1) * chunk), chunk = ceil(vocab / groups).
fn slice(x: u32, groups: u32) -> vec2<u32> {
  let chunk = (sp.vocab + groups - 1u) / groups;
  let begin = min(sp.vocab, x * chunk);
  return vec2<u32>(begin, min(sp.vocab, begin + chunk));
}

// The best (penalized) candidate among this lane's ids of the slice.
fn best_in_slice(li: u32, range: vec2<u32>, n: u32) -> Cand {
  var best = Cand(NEG, NO_ID);
  for (var id = range.x + li; id < range.y; id += WG) {
    let v = penalized(id, n);
    if (better(v, id, best.v, best.id)) { best = Cand(v, id); }
  }
  return best;
}
