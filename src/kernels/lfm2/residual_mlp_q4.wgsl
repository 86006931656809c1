// The second half of a pre-norm residual block for one vector (decode), in ONE dispatch:
//   stage 0   m = x + Wo y                          (out projection into the residual)
//   stage 1   h = silu(Wg n(m)) * (Wu n(m))         (n(v) = rmsnorm(v) * norm_w)
//   stage 2   x = m + Wd h
// with 4-bit matrices (q4_block.wgsl): Wo [H][CO], Wgu [2F][H] (gate rows, then up rows),
// Wd [H][F], all in one weights buffer.
//
// Why one dispatch: a decode step is a chain of small dependent kernels, each costing a few times
// what an empty dispatch does; the hypothesis was that launch, ramp and drain make up the
// difference. Here a fixed grid of workgroups (all of them resident at once: the caller sizes the
// grid for that) runs the three stages, and a workgroup starts a stage as soon as the words it
// needs exist.
//
// How workgroups wait for each other without grid barriers (WGSL has none, and its atomics are
// relaxed): every word of m and h is written with atomicStore carrying a tag in its lowest
// mantissa bit, the parity of the scratch's use count (Step.decode_step). A reader checks each
// word's tag; single-location coherence is all that needs, so no ordering between different
// words is assumed. Each use writes every word once, so the previous use's words carry the other
// parity. The tag costs m and h their last mantissa bit (relative change <= 2^-23). So that
// thousands of lanes do not poll the lines the producers write, each workgroup's lane 0 first
// waits on a per-stage counter (one increment per workgroup and stage) and only then do the lanes
// read and check the words. A wait that spins SPIN times sets the status word and goes on with
// what it has: a grid that is not resident gives an error the caller can see, never a hang.
//
// A workgroup takes the tiles t = wg, wg + G, ... of each stage (a tile: WG / L rows, one per lane
// group of L lanes). For each tile it first loads its lanes' weight blocks into registers, then
// (on its first tile of the stage) waits for and stages the stage's input in workgroup memory, so
// the weights' memory latency overlaps the wait for the other workgroups. (Holding several tiles'
// blocks at once measured much slower.) The residual a row adds to is read with the weights too,
// and stage 2 takes m from workgroup memory (staged by stage 1), so no memory round trip follows a
// tile's reduction (f5db27a in bench/PERFORMANCE.md).
//
// PREFETCH: the grid also reads the next dispatch's weights (the next layer's mix-in matvec) into
// the L2 cache while it waits on its own hand-overs, as the decode matvecs do for theirs
// (matvec_q4.wgsl): the dispatch after this one then starts on cache latency instead of memory
// latency. From stage 1 (whose wait is the longest idle window) it measured faster; from stage 0
// or 2, or with the head's first MiB after the last layer, slower (722d41b in bench/PERFORMANCE.md).
//
// Measured: a stage handed over inside the kernel costs about what a dispatch boundary does, so a
// decode step gains little (9dff99b in bench/PERFORMANCE.md); `ember tune` enables it only where
// it measures it faster.
#if SUBGROUPS
enable subgroups;
#endif

#include "step.wgsl"

struct Params {
  eps: f32,
  never: u32,          // 0: PREFETCH's guard store (which keeps its loads alive) never runs
  pf_quant_len: u32,   // PREFETCH: 16-byte words of the matrix read ahead, then of its scales
  pf_scales_len: u32,
  quant_at: vec4<u32>,   // where stage 0, 1, 2's quant starts in wq (16-byte words), then the read-ahead's
  scales_at: vec4<u32>,  // where their scales start in ws (floats), then the read-ahead's
  status_at: u32,        // the status word's index in scratch: H + F, or a word several binds share
}

// The matrices are ranges of one weights buffer (as a pack's loader places them), bound once for
// the quant words and once for the scales: Dawn allows a shader 10 storage buffers, and six
// bindings of their own left none for the read-ahead.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<vec4<f32>>;        // [CO]
@group(0) @binding(3) var<storage, read_write> x: array<f32>;       // [H], the residual
@group(0) @binding(4) var<storage, read> norm_w: array<vec4<f32>>;   // [H]
// m [H], h [F], a status word (nonzero once a wait gave up; p.status_at says which word is set, this
// one or one further on that the binds of a graph share), the counters of stages 0 and 1, then the
// stall word: zero except in tests of the give-up path, which set it so that every wait gives up
// at once (ResidualMlpQ4::stall_for_tests).
@group(0) @binding(5) var<storage, read_write> scratch: array<atomic<u32>>;
@group(0) @binding(6) var<uniform> step: Step;
@group(0) @binding(7) var<uniform> p: Params;

override WG: u32 = 256u;
override L: u32 = 32u;         // lanes per row: a power of two dividing WG
override H: u32 = 1024u;       // hidden (a multiple of 32)
override F: u32 = 2560u;       // ffn rows
override CO: u32 = 1024u;      // the out projection's cols (a multiple of 32)
override SPIN: u32 = 1048576u; // loads of one word before a wait gives up
override XS: u32 = 640u;       // vec4 of the widest input: max(CO, H, F) / 4
override SLACK: u32 = 0u;      // workgroups that may still be busy with a stage when its readers poll its words
override PF_STAGE: u32 = 1u;   // PREFETCH: the stage whose first tile (after its weight loads) reads ahead
override RT: u32 = WG / L;     // rows per tile

const MAX_HELD = 8u;    // weight blocks a lane holds (C++ checks ceil(cols / 32 / L) * rows <= 8)
const MAX_PIECES = 4u;  // input vec4 a lane waits for per stage (C++ checks F / 4 <= 4 * WG)

var<workgroup> x_shared: array<vec4<f32>, XS>;
// m as stage 1 read it: stage 2 adds its rows back from here instead of a round trip to memory at
// the end of every tile (only in workgroups that had a stage-1 tile; the others read the scratch).
var<workgroup> m_shared: array<vec4<f32>, H / 4u>;
var<workgroup> partials: array<f32, 2u * WG>;

var<private> tag: u32;
var<private> ready_count: u32;  // a stage counter's value once this step's stage is complete
var<private> gave_up = false;   // once a wait gave up, this lane waits no more
var<workgroup> lead_gave_up: bool;
var<private> norm_scale: f32;
var<private> pf_acc = vec4<u32>(0u);  // PREFETCH's earlier rounds, kept alive by the guard store

#include "q4_block.wgsl"
#include "reduce.wgsl"

// Piece k of block b sits at b * 8 + (k + b) % 8 (as in matvec_q4.wgsl's shared_x): lanes reading
// the same piece of consecutive blocks land on different banks.
fn x_slot(i: u32) -> u32 { return (i & ~7u) + ((i + i / 8u) & 7u); }

fn tagged(v: f32) -> u32 { return (bitcast<u32>(v) & ~1u) | tag; }

// Scratch word i once it carries this step's tag (or once the wait gave up).
fn settle(i: u32, first: u32) -> u32 {
  var w = first;
  var n = 0u;
  while ((w & 1u) != tag && !gave_up) {
    n++;
    if (n >= SPIN) {
      atomicOr(&scratch[p.status_at], 1u);
      gave_up = true;
    }
    w = atomicLoad(&scratch[i]);
  }
  return w;
}

// Scratch words 4i .. 4i + 3: the four loads issued together, then each settled.
fn issue4(i: u32) -> vec4<u32> {
  return vec4<u32>(atomicLoad(&scratch[4u * i]), atomicLoad(&scratch[4u * i + 1u]), atomicLoad(&scratch[4u * i + 2u]),
                   atomicLoad(&scratch[4u * i + 3u]));
}
fn settle4(i: u32, w: vec4<u32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(vec4<u32>(settle(4u * i, w.x), settle(4u * i + 1u, w.y), settle(4u * i + 2u, w.z), settle(4u * i + 3u, w.w)));
}

fn stage_cols(s: u32) -> u32 {
  switch s {
    case 0u: { return CO; }
    case 1u: { return H; }
    default: { return F; }
  }
}
fn stage_rows(s: u32) -> u32 {
  if (s == 1u) { return F; }
  return H;
}
fn stage_tiles(s: u32) -> u32 { return (stage_rows(s) + RT - 1u) / RT; }
fn stage_nr(s: u32) -> u32 {  // weight rows per output row: gate and up in stage 1
  if (s == 1u) { return 2u; }
  return 1u;
}

fn load_w(s: u32, blk: u32) -> vec4<u32> { return wq[p.quant_at[s] + blk]; }
fn load_scale(s: u32, blk: u32) -> f32 { return ws[p.scales_at[s] + blk]; }

// Counter of stage s's finished workgroups (s = 0, 1): after the status word.
fn counter(s: u32) -> u32 { return H + F + 1u + s; }

// Lane 0 waits until every workgroup has counted itself done with stage s; the others wait at the
// barrier (uniform control flow). Only one lane a workgroup polls, on one word: thousands of lanes
// polling the stage's own words would crowd the cache lines the producers are writing. Counters
// only grow (by the grid size a step); the words' tags still decide what is read, since nothing
// orders the counter's update after the words'. Lane 0 stops waiting once all but SLACK workgroups
// are done: the lanes then poll the words of the last few, one memory round trip sooner than
// another turn of the counter, with few enough lines still being written that the polling does not
// crowd them. (Polling the words alone, SLACK = the grid, measured slower at grids of 192 and more.)
fn wait_for_stage(s: u32, li: u32, groups: u32) {
  if (SLACK >= groups) { return; }
  if (li == 0u) {
    var n = 0u;
    let stall = atomicLoad(&scratch[H + F + 3u]) != 0u;
    while ((i32(atomicLoad(&scratch[counter(s)]) - (ready_count - SLACK)) < 0 || stall) && !gave_up) {
      n++;
      if (n >= SPIN || stall) {
        atomicOr(&scratch[p.status_at], 1u);
        gave_up = true;
      }
    }
    lead_gave_up = gave_up;
  }
  workgroupBarrier();
  gave_up = gave_up || lead_gave_up;
}

// Stage s's input into x_shared (uniform control flow). Stage 0 reads y, written by an earlier
// dispatch; stages 1 and 2 wait for this dispatch's m and h. Stage 1 also computes n's scale.
fn stage_input(s: u32, li: u32, sgl: u32, groups: u32) {
  if (s == 0u) {
    for (var i = li; i < CO / 4u; i += WG) { x_shared[x_slot(i)] = y[i]; }
    workgroupBarrier();
    return;
  }
  wait_for_stage(s - 1u, li, groups);
  let base = select(H / 4u, 0u, s == 1u);  // h follows m in the scratch
  let n = stage_cols(s) / 4u;
  var words: array<vec4<u32>, MAX_PIECES>;
  for (var k = 0u; k < MAX_PIECES; k++) {
    let i = li + k * WG;
    if (i < n) { words[k] = issue4(base + i); }
  }
  var ss = 0.0;
  for (var k = 0u; k < MAX_PIECES; k++) {
    let i = li + k * WG;
    if (i < n) {
      let v = settle4(base + i, words[k]);
      if (s == 1u) {
        ss += dot(v, v);
        m_shared[i] = v;
        x_shared[x_slot(i)] = v * norm_w[i];
      } else {
        x_shared[x_slot(i)] = v;
      }
    }
  }
  if (s == 1u) {
    norm_scale = inverseSqrt(workgroup_sum(ss, li, sgl) / f32(H) + p.eps);  // its barriers publish x_shared
  } else {
    workgroupBarrier();
  }
}

// The lane groups' totals of their nr (one or two) rows into `partials` (uniform control flow);
// the caller reads them with group_total after the barrier this ends with. sgl, the hardware
// subgroup size, is passed down from main rather than kept in a private: the uniformity analysis
// then knows it is uniform (the shuffles need that). Stages of one row skip the second reduction
// (0eea281 in bench/PERFORMANCE.md).
fn reduce_rows(li: u32, a0: f32, a1: f32, nr: u32, sgl: u32) {
#if SUBGROUPS
  let w = min(L, sgl);
  var s0 = a0;
  var s1 = a1;
  if (w == sgl) {
    s0 = subgroupAdd(s0);
    if (nr > 1u) { s1 = subgroupAdd(s1); }
  } else {
    for (var off = 1u; off < w; off <<= 1u) {
      s0 += subgroupShuffleXor(s0, off);
      if (nr > 1u) { s1 += subgroupShuffleXor(s1, off); }
    }
  }
  if (li % w == 0u) {
    partials[li / w] = s0;
    if (nr > 1u) { partials[WG + li / w] = s1; }
  }
  workgroupBarrier();
#else
  partials[li] = a0;
  if (nr > 1u) { partials[WG + li] = a1; }
  workgroupBarrier();
  let lane = li % L;
  for (var stride = L / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) {
      partials[li] += partials[li + stride];
      if (nr > 1u) { partials[WG + li] += partials[WG + li + stride]; }
    }
    workgroupBarrier();
  }
#endif
}

// Row j (0 or 1) of lane group `group`'s total, after reduce_rows.
fn group_total(group: u32, j: u32, sgl: u32) -> f32 {
#if SUBGROUPS
  let w = min(L, sgl);
  var t = 0.0;
  for (var i = 0u; i < L / w; i++) { t += partials[j * WG + group * (L / w) + i]; }
  return t;
#else
  return partials[j * WG + group * L];
#endif
}

fn silu(g: f32) -> f32 { return g / (1.0 + exp(-g)); }

#if PREFETCH
const PF_LOADS = 4u;  // independent 16-byte loads a lane issues before it uses any
// The last round's words: used only by the guard store at the end, so the loads stay in flight
// through the stage's wait instead of stalling the lane before it.
var<private> pf_got: array<vec4<u32>, PF_LOADS>;

// This workgroup's share of the next dispatch's weights, strided over the grid.
fn prefetch_next(wg_index: u32, groups: u32, li: u32) {
  let nq = p.pf_quant_len;
  let n = nq + p.pf_scales_len;
  let stride = groups * WG;
  for (var base = wg_index * WG + li; base < n; base += PF_LOADS * stride) {
    for (var k = 0u; k < PF_LOADS; k++) { pf_acc ^= pf_got[k]; }
    for (var k = 0u; k < PF_LOADS; k++) {
      let j = base + k * stride;
      if (j < nq) {
        pf_got[k] = wq[p.quant_at.w + j];
      } else if (j < n) {
        pf_got[k] = wq[p.scales_at.w / 4u + j - nq];
      }
    }
  }
}
#endif

fn run_stage(s: u32, wg_index: u32, groups: u32, li: u32, sgl: u32) {
  let group = li / L;
  let lane = li % L;
  let blocks = stage_cols(s) / 32u;
  let iters = (blocks + L - 1u) / L;
  let nr = stage_nr(s);
  let rows = stage_rows(s);
  let m_staged = wg_index < stage_tiles(1u);  // this workgroup ran a stage-1 tile
  for (var t = wg_index; t < stage_tiles(s); t += groups) {
    let row = t * RT + group;
    // The residual word this tile's row adds to, read now: its latency hides under the dots.
    var residual = 0.0;
    var residual_word = 0u;
    if (lane == 0u && row < rows) {
      if (s == 0u) { residual = x[row]; }
      if (s == 2u && !m_staged) { residual_word = atomicLoad(&scratch[row]); }
    }
    // 1. This lane's weight blocks of the tile into registers, every load issued before any is used.
    var held_w: array<vec4<u32>, MAX_HELD>;
    var held_s: array<f32, MAX_HELD>;
    for (var i = 0u; i < iters; i++) {
      let b = lane + i * L;
      for (var j = 0u; j < nr; j++) {
        if (b < blocks && row < rows) {
          let blk = (row + j * rows) * blocks + b;  // stage 1: the up row is F rows on
          held_w[i * nr + j] = load_w(s, blk);
          held_s[i * nr + j] = load_scale(s, blk);
        }
      }
    }
#if PREFETCH
    if (s == PF_STAGE && t == wg_index) { prefetch_next(wg_index, groups, li); }
#endif
    // 2. The stage's input, on the workgroup's first tile of the stage, while those loads are in flight.
    if (t == wg_index) { stage_input(s, li, sgl, groups); }
    // 3. The dots, the lane groups' sums, the outputs.
    var acc = array<f32, 2>(0.0, 0.0);
    for (var i = 0u; i < iters; i++) {
      let b = lane + i * L;
      if (b < blocks && row < rows) {
        var xs: array<vec4<f32>, 8>;
        for (var q = 0u; q < 8u; q++) { xs[q] = x_shared[x_slot(b * 8u + q)]; }
        for (var j = 0u; j < nr; j++) { acc[j] += held_s[i * nr + j] * q4_block_dot(held_w[i * nr + j], xs, 8.0); }
      }
    }
    reduce_rows(li, acc[0], acc[1], nr, sgl);
    if (lane == 0u && row < rows) {
      let total = group_total(group, 0u, sgl);
      switch s {
        case 0u: { atomicStore(&scratch[row], tagged(residual + total)); }
        case 1u: {
          let g = total * norm_scale;
          atomicStore(&scratch[H + row], tagged(silu(g) * group_total(group, 1u, sgl) * norm_scale));
        }
        default: {
          if (m_staged) {
            residual = m_shared[row / 4u][row % 4u];
          } else {
            residual = bitcast<f32>(settle(row, residual_word));
          }
          x[row] = residual + total;
        }
      }
    }
    workgroupBarrier();  // partials is reused by the next tile
  }
#if PREFETCH
  if (s == PF_STAGE && wg_index >= stage_tiles(s)) { prefetch_next(wg_index, groups, li); }  // no tile of its own
#endif
  // Count this workgroup done with stages 0 and 1 (its stores were issued before the barrier).
  if (s < 2u) {
    workgroupBarrier();
    if (li == 0u) { atomicAdd(&scratch[counter(s)], 1u); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if SUBGROUPS
  let sgl = sg_size;
#else
  let sgl = 1u;
#endif
  tag = step.decode_step & 1u;
  ready_count = step.decode_step * nwg.x;  // every step adds the grid size to each counter
  // Constant stage numbers: the driver can specialise each stage's loops.
  run_stage(0u, wg.x, nwg.x, li, sgl);
  run_stage(1u, wg.x, nwg.x, li, sgl);
  run_stage(2u, wg.x, nwg.x, li, sgl);
#if PREFETCH
  if (p.never == 1u) {
    for (var k = 0u; k < PF_LOADS; k++) { pf_acc ^= pf_got[k]; }
    atomicStore(&scratch[p.status_at], pf_acc.x ^ pf_acc.y ^ pf_acc.z ^ pf_acc.w);
  }
#endif
}
