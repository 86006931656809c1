// A GLB in a three.js scene (vendored from npm into the binary): lit from above, framed to the
// model's bounds, turned with the mouse. Renders only when the view changes.
import * as THREE from "three";
import { GLTFLoader } from "three/addons/loaders/GLTFLoader.js";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";

let view = null;  // { renderer, scene, camera, controls, model }

function setup(canvas) {
  // preserveDrawingBuffer: the picture stays readable (screenshots, the browser test's pixel check).
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  const scene = new THREE.Scene();
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  scene.background = new THREE.Color(dark ? 0x1e1e22 : 0xf3f3f5);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x555560, 2.0));
  const sun = new THREE.DirectionalLight(0xffffff, 2.0);
  sun.position.set(2, 3, 2);
  scene.add(sun);
  const grid = new THREE.GridHelper(1.5, 15, 0x999999, dark ? 0x333338 : 0xdddde2);
  grid.position.y = -0.5;
  scene.add(grid);
  const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 100);
  const controls = new OrbitControls(camera, canvas);
  controls.enableDamping = false;
  const draw = () => renderer.render(scene, camera);
  controls.addEventListener("change", draw);
  const resize = () => {
    const w = canvas.clientWidth || 400, h = canvas.clientHeight || 300;
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    draw();
  };
  new ResizeObserver(resize).observe(canvas);
  return { renderer, scene, camera, controls, draw, resize, model: null };
}

export async function showGlb(canvas, arrayBuffer) {
  if (!view) view = setup(canvas);
  const gltf = await new Promise((resolve, reject) => new GLTFLoader().parse(arrayBuffer, "", resolve, reject));
  if (view.model) {
    view.scene.remove(view.model);
    view.model.traverse((o) => { if (o.geometry) o.geometry.dispose(); });
  }
  view.model = gltf.scene;
  view.model.traverse((o) => {
    if (o.isMesh) o.material = new THREE.MeshStandardMaterial({ color: 0xd9480f, roughness: 0.6, metalness: 0.05, side: THREE.DoubleSide });
  });
  view.scene.add(view.model);
  const box = new THREE.Box3().setFromObject(view.model);
  const center = box.getCenter(new THREE.Vector3());
  const size = Math.max(...box.getSize(new THREE.Vector3()).toArray(), 0.1);
  view.controls.target.copy(center);
  // Far enough that the bounding sphere fits the vertical field of view, seen from above front right.
  const distance = (0.5 * Math.sqrt(3) * size) / Math.sin(THREE.MathUtils.degToRad(view.camera.fov / 2)) * 1.05;
  view.camera.position.copy(center).add(new THREE.Vector3(1, 0.75, 1.35).normalize().multiplyScalar(distance));
  view.controls.update();
  view.resize();
  let triangles = 0;
  view.model.traverse((o) => { if (o.isMesh && o.geometry.index) triangles += o.geometry.index.count / 3; });
  canvas.dataset.triangles = String(triangles);
}
