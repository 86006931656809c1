// A deliberately broken kernel: tests/gpu_layer_test.cpp checks that the compiler's message names
// this file and line 6. Never used by ember itself.
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1)
fn main() {
  o[0] = undefined_identifier;
}
