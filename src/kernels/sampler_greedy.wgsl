// Greedy sampling in ONE dispatch: P workgroups each find the best id of their slice of the logits
// (as sampler_partials.wgsl's greedy stage does), and the workgroup that finishes last picks among
// the P (as sampler_pick.wgsl's greedy entry does) and writes tokens[out_slot]; with EMBED it
// also embeds the id for the next decode step (sampler_embed.wgsl). A decode step is a chain of
// latency-bound dispatches; this one takes a dependent dispatch boundary out of every token.
//
// How the last workgroup sees the others' partials (WGSL atomics are relaxed): each workgroup's
// lane 0 stores its best (logit, id) as two words with atomicStore, each tagged in bit 31 with the
// parity of the use, then counts itself in with atomicAdd. The one that counts P knows every other
// store was issued; it reloads each word until its tag is this use's (single-location coherence is
// all that takes). A pair holds 62 bits: the logit's 32 (31 in the first word, its lowest bit in
// the second) and a 30-bit id, so the vocabulary must be below 2^30 - 1 (NONE: an empty slice).
// The counter runs over two uses, 0 .. 2P, and gives the parity: a use starts it at 0 or P, and
// the last workgroup leaves it at the next use's start. Tag bit = 1 - parity, so the zeroed buffer
// of a fresh sampler reads as stale. No workgroup waits for another that may not have started, so
// any grid size works. A reload that spins SPIN times sets the status word and takes what it has:
// a wrong id the caller can see (Sampler::gave_up), never a hang.
//
// Measured faster than the two dispatches in every round (41b67b8 in bench/PERFORMANCE.md); a
// first version that kept only the id and read its logit again gained about half as much.
override WG: u32 = 256u;      // power of two
override WMAX: u32 = 256u;    // recent ids considered (window_len is clamped to it)
override SORTN: u32 = 256u;   // sampler_common.wgsl's workgroup memory: WG is all it takes here
override P: u32 = 256u;       // workgroups (the dispatch size)
override SPIN: u32 = 1048576u;

#include "sampler_common.wgsl"
#include "sampler_window.wgsl"

// [0, 2P) the tagged pairs, [2P] the arrivals counter, [2P + 1] the status word (nonzero: a reload
// gave up), [2P + 2] the stall word: zero except in tests of the give-up path, which set it so
// that every reload gives up at once (Sampler::stall_for_tests).
@group(0) @binding(0) var<storage, read_write> partials: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> sp: SamplerParams;
// The logits come last, after the embedding's bindings 3 to 6 or 7 (sampler_embed.wgsl).
#if EMBED
#include "sampler_embed.wgsl"
#if ASYMMETRIC
@group(0) @binding(8) var<storage, read> logits: array<f32>;
#else
@group(0) @binding(7) var<storage, read> logits: array<f32>;
#endif
#else
@group(0) @binding(3) var<storage, read> logits: array<f32>;
#endif

const TAG = 0x80000000u;
const ID_BITS = 0x3fffffffu;
const NONE = ID_BITS;
override COUNTER: u32 = 2u * P;  // (derived: the counter's word)
const NOT_LAST = 1u;  // (a tag is 0 or TAG)
var<workgroup> last_tag: u32;  // this use's tag in the last workgroup, NOT_LAST in the others

// Word `w` of this use (tag `tag`): reloaded until it carries the tag.
fn tagged_word(w: u32, tag: u32, stall: bool) -> u32 {
  var word = atomicLoad(&partials[w]);
  for (var spins = 0u; (word & TAG) != tag || stall; spins++) {
    if (spins == SPIN || stall) {
      atomicStore(&partials[COUNTER + 1u], 1u);
      break;
    }
    word = atomicLoad(&partials[w]);
  }
  return word;
}

@compute @workgroup_size(WG)
fn greedy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let b = best_of_workgroup(li, best_in_slice(li, slice(wg.x, P), load_window(li)));
  if (li == 0u) {
    let parity = atomicLoad(&partials[COUNTER]) / P;
    let tag = (1u - parity) << 31u;
    let bits = bitcast<u32>(b.v);
    atomicStore(&partials[2u * wg.x], tag | (bits >> 1u));
    atomicStore(&partials[2u * wg.x + 1u], tag | ((bits & 1u) << 30u) | min(b.id, NONE));
    let arrived = atomicAdd(&partials[COUNTER], 1u) + 1u;
    var mine = NOT_LAST;
    if (arrived % P == 0u) {
      atomicStore(&partials[COUNTER], arrived % (2u * P));
      mine = tag;
    }
    last_tag = mine;
  }
  let tag = workgroupUniformLoad(&last_tag);
  if (tag == NOT_LAST) { return; }
  var best = Cand(NEG, NO_ID);
  let stall = atomicLoad(&partials[COUNTER + 2u]) != 0u;
  for (var i = li; i < P; i += WG) {
    let hi = tagged_word(2u * i, tag, stall);
    let lo = tagged_word(2u * i + 1u, tag, stall);
    let v = bitcast<f32>((hi << 1u) | ((lo >> 30u) & 1u));
    let id = lo & ID_BITS;
    if (id != NONE && better(v, id, best.v, best.id)) { best = Cand(v, id); }
  }
  let picked = best_of_workgroup(li, best).id;
  if (li == 0u) { tokens[sp.out_slot] = picked; }
#if EMBED
  embed_next(picked, li);
#endif
}
