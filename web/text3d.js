// The "Text to 3D" panel: asks the server whether it has a TRELLIS pipeline (GET /v1/text-to-3d),
// generates an asset (POST: GLB and preview PNG as base64) and shows the GLB in the three.js
// viewer (viewer.js, loaded only when the first asset arrives).
import { api, errorText } from "./api.js";

const $ = (id) => document.getElementById(id);
let checked = false, glbUrl = null, note = "";

function bytes(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

async function check() {
  if (checked) return;
  checked = true;
  try {
    const res = await api("v1/text-to-3d");
    if (!res.ok) throw new Error(await errorText(res));
    const info = await res.json();
    if (!info.available) {
      $("t3d-unavailable").hidden = false;
      return;
    }
    $("t3d-steps").placeholder = String(info.steps);
    $("t3d-steps").max = String(info.max_steps);
    $("t3d-cfg").placeholder = String(info.cfg);
    $("t3d-form").hidden = false;
    if (info.random_stages && info.random_stages.length)
      note = "Note: this pipeline has random weights (" + info.random_stages.join(", ") + "): shapes are noise, not the prompt. ";
    $("t3d-status").textContent = note;
  } catch (e) {
    checked = false;
    $("t3d-status").textContent = "Cannot reach the server: " + (e.message || e);
  }
}

async function generate(e) {
  e.preventDefault();
  const body = { prompt: $("t3d-prompt").value.trim() };
  if (!body.prompt) return;
  for (const [k, id] of [["seed", "t3d-seed"], ["steps", "t3d-steps"], ["cfg", "t3d-cfg"]])
    if ($(id).value !== "") body[k] = Number($(id).value);
  $("t3d-generate").disabled = true;
  document.body.dataset.t3d = "generating";
  $("t3d-status").textContent = "Generating… (the text encoder, the flow sampler and the decoder run on the server's GPU)";
  try {
    const res = await api("v1/text-to-3d", { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) throw new Error(await errorText(res));
    const r = await res.json();
    const glb = bytes(r.glb);
    if (glbUrl) URL.revokeObjectURL(glbUrl);
    glbUrl = URL.createObjectURL(new Blob([glb], { type: "model/gltf-binary" }));
    $("t3d-download").href = glbUrl;
    $("t3d-preview").src = "data:image/png;base64," + r.preview_png;
    $("t3d-info").textContent = `${r.triangles} triangles · ${r.steps} steps · ${r.seconds.toFixed(1)} s`;
    $("t3d-result").hidden = false;
    const { showGlb } = await import("./viewer.js");
    await showGlb($("t3d-canvas"), glb.buffer);
    $("t3d-status").textContent = note + "Drag to turn the asset, scroll to zoom.";
    document.body.dataset.t3d = "shown";
  } catch (err) {
    $("t3d-status").textContent = "Failed: " + (err.message || err);
    document.body.dataset.t3d = "failed";
  } finally {
    $("t3d-generate").disabled = false;
  }
}

// Returns what to call when the tab is shown.
export function initTextTo3D() {
  $("t3d-form").addEventListener("submit", generate);
  return check;
}
