// Renders the iso-surface {f = iso} of a dense scalar grid (occupied where f > iso) into an RGBA8
// image of up to 4 views side by side (2 x 2), one invocation per pixel. Orthographic cameras in
// the grid's box [-0.5, 0.5]^3 (sample (i, j, k) of [n0][n1][n2] at ((i, j, k) + 0.5) / n - 0.5);
// the field is trilinear inside, `iso - 1` beyond its outermost samples. Rays step half a cell,
// refine the first crossing by bisection and shade it by the field's gradient (Lambert with a
// headlight plus ambient); misses get the background colour.
struct Camera {
  eye: vec4<f32>,      // the view's centre, pulled back along -forward
  right: vec4<f32>,    // xyz: unit, w: half extent of the view
  up: vec4<f32>,
  forward: vec4<f32>,
}

struct Params {
  n: vec4<u32>,        // xyz: grid extent; w: views
  view: u32,           // pixels per view side
  width: u32,          // image width (2 views across when views > 1)
  iso: f32,
  _pad: u32,
  cams: array<Camera, 4>,
}

@group(0) @binding(0) var<storage, read> f: array<f32>;
@group(0) @binding(1) var<storage, read_write> image: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn sample_at(i: i32, j: i32, k: i32) -> f32 {
  let n = vec3<i32>(p.n.xyz);
  if (i < 0 || j < 0 || k < 0 || i >= n.x || j >= n.y || k >= n.z) { return p.iso - 1.0; }
  return f[u32((i * n.y + j) * n.z + k)];
}

// The trilinear field at box point q.
fn field(q: vec3<f32>) -> f32 {
  let g = (q + 0.5) * vec3<f32>(p.n.xyz) - 0.5;
  let b = floor(g);
  let t = g - b;
  let i = vec3<i32>(b);
  var acc = 0.0;
  for (var c = 0; c < 8; c++) {
    let o = vec3<i32>(c & 1, (c >> 1) & 1, (c >> 2) & 1);
    let wv = mix(1.0 - t, t, vec3<f32>(o));
    acc += wv.x * wv.y * wv.z * sample_at(i.x + o.x, i.y + o.y, i.z + o.z);
  }
  return acc;
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let views = p.n.w;
  let height = select(p.view, 2u * p.view, views > 2u);
  if (gid.x >= p.width || gid.y >= height) { return; }
  let vi = (gid.y / p.view) * 2u + gid.x / p.view;
  let background = pack4x8unorm(vec4<f32>(0.12, 0.12, 0.14, 1.0));
  let pix = gid.y * p.width + gid.x;
  if (vi >= views) {
    image[pix] = background;
    return;
  }
  let cam = p.cams[vi];
  let ext = cam.right.w;
  let u = ((f32(gid.x % p.view) + 0.5) / f32(p.view) * 2.0 - 1.0) * ext;
  let v = (1.0 - (f32(gid.y % p.view) + 0.5) / f32(p.view) * 2.0) * ext;
  let dir = cam.forward.xyz;
  let origin = cam.eye.xyz + u * cam.right.xyz + v * cam.up.xyz;
  // Slab test against the box grown by one cell (the outside border where the surface closes).
  let grow = 1.0 / vec3<f32>(p.n.xyz);
  let lo = vec3<f32>(-0.5) - grow;
  let hi = vec3<f32>(0.5) + grow;
  let inv = 1.0 / select(dir, vec3<f32>(1e-12), abs(dir) < vec3<f32>(1e-12));
  let t0 = (lo - origin) * inv;
  let t1 = (hi - origin) * inv;
  let tnear = max(max(min(t0.x, t1.x), min(t0.y, t1.y)), min(t0.z, t1.z));
  let tfar = min(min(max(t0.x, t1.x), max(t0.y, t1.y)), max(t0.z, t1.z));
  if (tnear >= tfar || tfar <= 0.0) {
    image[pix] = background;
    return;
  }
  let step = 0.5 / f32(max(p.n.x, max(p.n.y, p.n.z)));
  var t = max(tnear, 0.0);
  var prev = t;
  var hit = false;
  loop {
    if (t > tfar) { break; }
    if (field(origin + t * dir) > p.iso) {
      hit = true;
      break;
    }
    prev = t;
    t += step;
  }
  if (!hit) {
    image[pix] = background;
    return;
  }
  var a = prev;
  var b = t;
  for (var i = 0; i < 8; i++) {
    let m = 0.5 * (a + b);
    if (field(origin + m * dir) > p.iso) { b = m; } else { a = m; }
  }
  let q = origin + b * dir;
  let h = 0.5 / vec3<f32>(p.n.xyz);
  let grad = vec3<f32>(field(q + vec3<f32>(h.x, 0.0, 0.0)) - field(q - vec3<f32>(h.x, 0.0, 0.0)),
                       field(q + vec3<f32>(0.0, h.y, 0.0)) - field(q - vec3<f32>(0.0, h.y, 0.0)),
                       field(q + vec3<f32>(0.0, 0.0, h.z)) - field(q - vec3<f32>(0.0, 0.0, h.z))) / h;
  var nrm = -dir;
  if (dot(grad, grad) > 0.0) { nrm = -normalize(grad); }
  let light = normalize(-dir + 0.5 * cam.up.xyz);
  let shade = 0.25 + 0.75 * max(dot(nrm, light), 0.0);
  image[pix] = pack4x8unorm(vec4<f32>(vec3<f32>(0.95, 0.62, 0.30) * shade, 1.0));
}
