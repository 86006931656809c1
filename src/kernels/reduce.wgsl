// Workgroup-wide sum, shared by every kernel that reduces a row (norms, softmax, dot products).
// Include after `override WG: u32` is declared. Two structures:
//   SUBGROUPS: subgroupAdd inside each subgroup, then one partial per subgroup in workgroup memory.
//   otherwise: a tree in workgroup memory (needs no optional feature).
// Subgroups are assumed to be laid out linearly over local_invocation_index (true on every
// driver we have measured: lavapipe, NVIDIA); the partial slot is local_index / subgroup_size.

#if SUBGROUPS
var<workgroup> reduce_partials: array<f32, 256>;  // >= WG / smallest subgroup size (4)

fn workgroup_sum(v: f32, li: u32, sg_size: u32) -> f32 {
  let s = subgroupAdd(v);
  if (li % sg_size == 0u) { reduce_partials[li / sg_size] = s; }
  workgroupBarrier();
  let n = (WG + sg_size - 1u) / sg_size;
  var total = 0.0;
  for (var i = 0u; i < n; i++) { total += reduce_partials[i]; }
  workgroupBarrier();  // partials may be reused by the next call
  return total;
}

fn workgroup_max(v: f32, li: u32, sg_size: u32) -> f32 {
  let s = subgroupMax(v);
  if (li % sg_size == 0u) { reduce_partials[li / sg_size] = s; }
  workgroupBarrier();
  let n = (WG + sg_size - 1u) / sg_size;
  var m = reduce_partials[0];
  for (var i = 1u; i < n; i++) { m = max(m, reduce_partials[i]); }
  workgroupBarrier();
  return m;
}
#else
var<workgroup> reduce_partials: array<f32, WG>;

fn workgroup_sum(v: f32, li: u32, sg_size: u32) -> f32 {
  reduce_partials[li] = v;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (li < stride) { reduce_partials[li] += reduce_partials[li + stride]; }
    workgroupBarrier();
  }
  let total = reduce_partials[0];
  workgroupBarrier();
  return total;
}

fn workgroup_max(v: f32, li: u32, sg_size: u32) -> f32 {
  reduce_partials[li] = v;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (li < stride) { reduce_partials[li] = max(reduce_partials[li], reduce_partials[li + stride]); }
    workgroupBarrier();
  }
  let m = reduce_partials[0];
  workgroupBarrier();
  return m;
}
#endif
