// The page's entry: tabs, the model's name, and the two panels (chat.js, text3d.js).
import { api } from "./api.js";
import { initChat } from "./chat.js";
import { initTextTo3D } from "./text3d.js";

const tabs = [...document.querySelectorAll('[role="tab"]')];
let show3d = null;

function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
  }
  if (tab.id === "tab-3d" && show3d) show3d();
  location.hash = tab.id === "tab-3d" ? "#3d" : "";
}
for (const t of tabs) {
  t.addEventListener("click", () => select(t));
  t.addEventListener("keydown", (e) => {  // arrow keys move between tabs (WAI-ARIA tabs pattern)
    const i = tabs.indexOf(t);
    const next = e.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : e.key === "ArrowLeft" ? tabs[(i + tabs.length - 1) % tabs.length] : null;
    if (next) { next.focus(); select(next); }
  });
}

async function showModel() {
  try {
    const res = await api("v1/models");
    if (res.status === 404) {  // `ember serve --stages` alone: text to 3D only
      document.getElementById("empty-hint").textContent = "This server has no language model (start it with --model DIR to chat).";
      for (const el of document.querySelectorAll("#composer textarea, #composer button")) el.disabled = true;
      select(document.getElementById("tab-3d"));
      return;
    }
    if (!res.ok) return;
    const j = await res.json();
    const id = j.data && j.data[0] && j.data[0].id;
    if (id) document.getElementById("model-name").textContent = "model: " + id;
  } catch { /* the chat reports a server that cannot be reached */ }
}

initChat();
show3d = initTextTo3D();
if (location.hash === "#3d") select(document.getElementById("tab-3d"));
await showModel();
document.body.dataset.state = "idle";
