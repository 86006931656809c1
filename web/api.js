// Requests to the server this page came from (relative URLs, so it also works behind a proxy
// under a sub-path), with the API key when the server asks for one.
const KEY = "ember.apiKey";

const dialog = () => document.getElementById("key-dialog");

// Shows the key dialog and resolves once the user has given a key.
function askKey(message) {
  const d = dialog();
  document.getElementById("key-error").textContent = message || "";
  const input = document.getElementById("key-input");
  input.value = "";
  return new Promise((resolve) => {
    d.addEventListener("close", () => {
      sessionStorage.setItem(KEY, input.value.trim());
      resolve();
    }, { once: true });
    if (!d.open) d.showModal();
  });
}

// fetch() with the key; a 401 asks for the key and tries again.
export async function api(path, init = {}) {
  for (;;) {
    const headers = new Headers(init.headers || {});
    const key = sessionStorage.getItem(KEY);
    if (key) headers.set("Authorization", "Bearer " + key);
    if (init.body && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401) return res;
    await askKey(key ? "That key was refused. Try again." : "");
  }
}

// The message of an OpenAI-style error body, or the HTTP status.
export async function errorText(res) {
  try {
    const j = await res.json();
    if (j && j.error && j.error.message) return j.error.message;
  } catch { /* not JSON */ }
  return `HTTP ${res.status}`;
}
