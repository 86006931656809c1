// The decode matvecs' prefetch workgroups (PREFETCH in matvec_q4.wgsl and matvec_q4_strided.wgsl):
// workgroups past the rows' own read the next matvec's weights (pf_quant, pf_scales) so that they
// sit in the L2 cache when that dispatch runs. Include after WG, p (with `never`), y, pf_quant and
// pf_scales are declared.
const PF_PER_THREAD = 8u;  // independent 16-byte loads per lane

// Prefetch workgroup k: the quant words first, then the scales, PF_PER_THREAD * WG vec4 each.
fn prefetch(k: u32, li: u32) {
  let per_group = WG * PF_PER_THREAD;
  let nq = arrayLength(&pf_quant);
  let q_groups = (nq + per_group - 1u) / per_group;
  var acc = vec4<u32>(0u);
  if (k < q_groups) {
    for (var i = 0u; i < PF_PER_THREAD; i++) {
      let j = k * per_group + i * WG + li;
      if (j < nq) { acc ^= pf_quant[j]; }
    }
  } else {
    let ns = arrayLength(&pf_scales);
    for (var i = 0u; i < PF_PER_THREAD; i++) {
      let j = (k - q_groups) * per_group + i * WG + li;
      if (j < ns) { acc ^= pf_scales[j]; }
    }
  }
  if (p.never == 1u) { y[0] = f32(acc.x ^ acc.y ^ acc.z ^ acc.w); }
}
