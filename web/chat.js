// The chat panel: a conversation kept in local storage, replies streamed from
// /v1/chat/completions (server-sent events), a stop button that aborts the request (the server
// frees the slot when the connection closes), sampling settings and a system prompt.
import { api, errorText } from "./api.js";

const STORE = "ember.chat";
const $ = (id) => document.getElementById(id);
const SETTINGS = ["temperature", "top_p", "max_tokens", "seed"];

// { system, settings: {temperature, ...} as typed, messages: [{role, content, stopped?, error?, meta?}] }
let state = { system: "", settings: {}, messages: [] };
let controller = null;  // the request in flight

function load() {
  try {
    const s = JSON.parse(localStorage.getItem(STORE));
    if (s && Array.isArray(s.messages)) state = { system: s.system || "", settings: s.settings || {}, messages: s.messages };
  } catch { /* a damaged entry starts a new chat */ }
}
function save() {
  try { localStorage.setItem(STORE, JSON.stringify(state)); } catch { /* storage full or off: the chat still works */ }
}

function messageElement(m) {
  const el = document.createElement("article");
  el.className = "msg " + m.role;
  el.dataset.role = m.role;
  const who = document.createElement("div");
  who.className = "who";
  who.textContent = m.role === "user" ? "You" : "Model";
  const text = document.createElement("div");
  text.className = "text";
  text.textContent = m.content;
  const meta = document.createElement("div");
  meta.className = "meta";
  el.append(who, text, meta);
  setMeta(el, m);
  return el;
}

function setMeta(el, m) {
  const meta = el.querySelector(".meta");
  meta.classList.toggle("error", !!m.error);
  meta.textContent = m.error ? "Error: " + m.error : m.stopped ? "Stopped" + (m.meta ? " · " + m.meta : "") : m.meta || "";
}

function render() {
  const box = $("messages");
  box.querySelectorAll(".msg").forEach((e) => e.remove());
  for (const m of state.messages) box.append(messageElement(m));
  $("empty-hint").hidden = state.messages.length > 0;
  box.scrollTop = box.scrollHeight;
}

function setBusy(busy) {
  $("send").hidden = busy;
  $("stop").hidden = !busy;
  $("new-chat").disabled = busy;
  document.body.dataset.state = busy ? "streaming" : "idle";
  if (!busy) $("prompt").focus();
}

// The request body: the system prompt, then the turns (failed replies and empty stopped ones left out).
function requestBody() {
  const messages = [];
  if (state.system.trim()) messages.push({ role: "system", content: state.system });
  for (const m of state.messages.slice(0, -1))
    if (!m.error && m.content) messages.push({ role: m.role, content: m.content });
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  const num = (k) => state.settings[k] === undefined || state.settings[k] === "" ? null : Number(state.settings[k]);
  for (const k of SETTINGS) if (num(k) !== null && Number.isFinite(num(k))) body[k] = num(k);
  return body;
}

async function send(text) {
  state.messages.push({ role: "user", content: text });
  const reply = { role: "assistant", content: "" };
  state.messages.push(reply);
  save();
  render();
  const el = $("messages").lastElementChild;
  const textNode = el.querySelector(".text");
  const box = $("messages");
  el.setAttribute("aria-busy", "true");
  setBusy(true);
  $("chat-status").textContent = "";
  controller = new AbortController();
  let first = 0, tokens = null;
  const started = performance.now();
  try {
    const res = await api("v1/chat/completions", { method: "POST", body: JSON.stringify(requestBody()), signal: controller.signal });
    if (!res.ok) throw new Error(await errorText(res));
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;  // ": keep-alive" comments
          const data = line.slice(6);
          if (data === "[DONE]") continue;
          const j = JSON.parse(data);
          if (j.error) throw new Error(j.error.message || "the server failed");
          if (j.usage) tokens = j.usage.completion_tokens;
          const delta = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content;
          if (delta) {
            if (!first) first = performance.now();
            const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
            reply.content += delta;
            textNode.textContent = reply.content;
            if (stick) box.scrollTop = box.scrollHeight;
            save();
          }
        }
      }
    }
    const secs = (performance.now() - (first || started)) / 1000;
    if (tokens !== null) reply.meta = `${tokens} tokens` + (tokens > 1 && secs > 0 ? ` · ${(tokens / secs).toFixed(1)} tok/s` : "");
  } catch (e) {
    if (e.name === "AbortError") reply.stopped = true;
    else reply.error = e.message || String(e);
  } finally {
    controller = null;
    el.removeAttribute("aria-busy");
    setMeta(el, reply);
    save();
    setBusy(false);
  }
}

export function initChat() {
  load();
  $("system").value = state.system;
  for (const k of SETTINGS) if (state.settings[k] !== undefined) $(k).value = state.settings[k];
  $("system").addEventListener("input", () => { state.system = $("system").value; save(); });
  for (const k of SETTINGS) $(k).addEventListener("input", () => { state.settings[k] = $(k).value; save(); });
  // Settings typed before the first save count too.
  for (const k of SETTINGS) state.settings[k] = $(k).value;
  render();

  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || controller) return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => { if (controller) controller.abort(); });
  $("new-chat").addEventListener("click", () => {
    state.messages = [];
    save();
    render();
    $("chat-status").textContent = "";
    $("prompt").focus();
  });
}
