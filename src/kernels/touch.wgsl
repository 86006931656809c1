// The smallest useful dispatch: increments a few words. Measures per-dispatch cost.
@group(0) @binding(0) var<storage, read_write> words: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { words[gid.x] = words[gid.x] + 1u; }
