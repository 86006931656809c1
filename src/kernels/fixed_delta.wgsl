// A residual delta that many workgroups add to at once (the decode MLP's down projection split
// over its channels, matvec_q4.wgsl DOWN_DELTA). Each value is a 64-bit fixed-point number with 32
// fraction bits, two u32 words (lo, hi), summed with integer atomics: integer sums are exact and
// do not depend on the order the workgroups add in, so the result is deterministic. Magnitudes
// are clamped below 2^30, far above any activation.

// v as (lo, hi): hi = floor(v) in two's complement, lo = the fraction times 2^32.
fn fixed_of(v: f32) -> vec2<u32> {
  let c = clamp(v, -1073741824.0, 1073741824.0);
  let f = floor(c);
  return vec2<u32>(u32((c - f) * 4294967296.0), bitcast<u32>(i32(f)));
}

fn value_of_fixed(w: vec2<u32>) -> f32 {
  return f32(bitcast<i32>(w.y)) + f32(w.x) * (1.0 / 4294967296.0);
}
