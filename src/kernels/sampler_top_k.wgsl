// The sampler stages' top-K selection (sampler_partials.wgsl's topk, sampler_pick.wgsl's sample):
// a chunked selection by bitonic sort in workgroup memory (sampler_common.wgsl's sv/si). The
// including file declares
//   fn load_candidate(i: u32) -> Cand
// and the override K (candidates kept; SORTN >= 2 K).

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
