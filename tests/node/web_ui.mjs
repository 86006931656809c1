// The web page of `ember serve` in a real browser: Debian's chromium, headless, driven by
// puppeteer-core (pinned in package.json; it uses the installed browser and downloads nothing).
// Chats (the streamed reply grows in the DOM), stops a reply mid-stream (the UI is usable again
// and the server's slot is free), reloads (the conversation is kept), and with `--3d` generates
// an asset in the Text to 3D tab and checks that the viewer drew it. Screenshots go to OUT_DIR.
// With `--key KEY` (a server started with --api-key) the page must ask for the key: a wrong one
// is asked for again, the right one lets it load.
// Usage: node web_ui.mjs BASE_URL OUT_DIR [--3d] [--key KEY]. Prints one JSON line; exits non-zero on a failure.
import fs from "fs";
import path from "path";
import puppeteer from "puppeteer-core";

const [base, outDir, ...flags] = process.argv.slice(2);
const with3d = flags.includes("--3d");
const key = flags.includes("--key") ? flags[flags.indexOf("--key") + 1] : null;
const auth = key ? { Authorization: "Bearer " + key } : {};
const chromium = process.env.EMBER_CHROMIUM || "/usr/bin/chromium";
const result = { steps: [] };
const step = (name, data = {}) => result.steps.push({ name, ...data });
function fail(message) {
  throw new Error(message);
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  // --no-sandbox: CI containers run as root, where chromium's sandbox cannot start; their /dev/shm
  // is often small. SwiftShader:
  // WebGL for the 3D viewer without a GPU.
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--window-size=1200,800"],
  defaultViewport: { width: 1200, height: 800 },
});
let exitCode = 0;
try {
  const page = await browser.newPage();
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });

  const idle = () => page.waitForSelector('body[data-state="idle"]', { timeout: 60000 });
  const assistantTexts = () => page.$$eval(".msg.assistant .text", (els) => els.map((e) => e.textContent));
  const setField = async (id, value) => {
    await page.$eval("#" + id, (el, v) => { el.value = v; el.dispatchEvent(new Event("input", { bubbles: true })); }, String(value));
  };
  const health = async () => (await fetch(base + "/health")).json();

  await page.goto(base + "/", { waitUntil: "load" });
  if (key) {
    const give = async (k) => {
      await page.waitForSelector("#key-dialog[open]", { timeout: 20000 });
      await page.type("#key-input", k);
      await page.keyboard.press("Enter");
    };
    await give(key + "-wrong");
    await page.waitForFunction(() => document.getElementById("key-dialog").open && document.getElementById("key-error").textContent !== "",
                               { timeout: 20000 });
    await give(key);
    step("api_key");
  }
  await idle();
  const models = await (await fetch(base + "/v1/models", { headers: auth })).json();
  const ctx = models.data[0].context_length;

  // 1. A message; the reply's length is recorded at every DOM change while it streams.
  await setField("temperature", 1);
  await setField("seed", 3);
  await setField("max_tokens", 48);
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver(() => {
      const t = document.querySelector(".msg.assistant:last-of-type .text");
      if (t) window.__lengths.push(t.textContent.length);
    }).observe(document.getElementById("messages"), { subtree: true, childList: true, characterData: true });
  });
  await page.type("#prompt", "Tell me a story.");
  await page.keyboard.press("Enter");
  await page.waitForSelector('body[data-state="streaming"]', { timeout: 10000 });
  await idle();
  const lengths = await page.evaluate(() => window.__lengths);
  const first = (await assistantTexts())[0];
  const distinct = new Set(lengths.filter((n) => n > 0)).size;
  const firstMeta = await page.$eval(".msg.assistant .meta", (e) => e.textContent);
  step("chat", { chars: first.length, distinct_lengths: distinct, meta: firstMeta });
  if (!first.length) fail("the reply is empty: the page could not chat (meta: " + firstMeta + ")");
  if (distinct < 2) fail(`the reply did not grow while streaming (lengths seen: ${JSON.stringify(lengths)})`);
  if (/Error/.test(firstMeta)) fail("the reply shows an error: " + firstMeta);

  // 2. A long reply, stopped once it has begun. The test model ends a reply at random (its end
  // token is as likely as any), so the seed is one whose reply to this very conversation reaches
  // max_tokens, found through the API first (a seed gives the same tokens every time).
  const longTokens = Math.min(160, ctx - 64);
  const second = "Now a very long one.";
  const history = await page.evaluate(() => JSON.parse(localStorage.getItem("ember.chat")).messages);
  const messages = [...history.map((m) => ({ role: m.role, content: m.content })), { role: "user", content: second }];
  let longSeed = null;
  for (let seed = 1; seed <= 60 && longSeed === null; seed++) {
    const r = await (await fetch(base + "/v1/chat/completions", {
      method: "POST", headers: { "Content-Type": "application/json", ...auth },
      body: JSON.stringify({ messages, temperature: 1, top_p: 1, max_tokens: longTokens, seed }),
    })).json();
    if (r.choices && r.choices[0].finish_reason === "length") longSeed = seed;
  }
  if (longSeed === null) fail(`no seed in 1..60 makes a reply of ${longTokens} tokens`);
  await setField("seed", longSeed);
  await setField("max_tokens", longTokens);
  await page.type("#prompt", second);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const t = document.querySelectorAll(".msg.assistant .text");
    return t.length === 2 && t[1].textContent.length > 0;
  }, { timeout: 30000 });
  if (await page.$('body[data-state="idle"]')) fail("the long reply ended before it could be stopped");
  await page.click("#stop");
  await idle();
  const stoppedMeta = await page.$$eval(".msg.assistant .meta", (els) => els[1].textContent);
  const stoppedAt = (await assistantTexts())[1].length;
  await new Promise((r) => setTimeout(r, 500));
  const later = (await assistantTexts())[1].length;
  if (!/^Stopped/.test(stoppedMeta)) fail("the stopped reply is not marked stopped: " + stoppedMeta);
  if (later !== stoppedAt) fail(`the reply kept growing after stop (${stoppedAt} -> ${later} characters)`);
  let h = await health();
  for (let i = 0; i < 50 && h.active !== 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    h = await health();
  }
  if (h.active !== 0) fail("the server's slot was not freed after stop: " + JSON.stringify(h));
  step("stop", { chars: stoppedAt, meta: stoppedMeta, health: h, seed: longSeed });

  // 3. The UI is usable again: a third message gets a reply.
  await setField("max_tokens", 16);
  await page.type("#prompt", "And a short one.");
  await page.click("#send");
  await page.waitForSelector('body[data-state="streaming"]', { timeout: 10000 });
  await idle();
  const texts = await assistantTexts();
  if (texts.length !== 3 || !texts[2].length) fail("no reply after stop: " + JSON.stringify(texts));
  step("after_stop", { chars: texts[2].length });

  // 4. A reload keeps the conversation and the settings.
  const before = await page.$$eval(".msg", (els) => els.map((e) => [e.dataset.role, e.querySelector(".text").textContent]));
  await page.reload({ waitUntil: "load" });
  await idle();
  const after = await page.$$eval(".msg", (els) => els.map((e) => [e.dataset.role, e.querySelector(".text").textContent]));
  if (JSON.stringify(after) !== JSON.stringify(before)) fail("the conversation was not kept over a reload");
  if ((await page.$eval("#max_tokens", (e) => e.value)) !== "16") fail("the settings were not kept over a reload");
  step("reload", { messages: after.length });
  await page.screenshot({ path: path.join(outDir, "web-ui.png") });

  // 5. New chat clears it.
  await page.click("#new-chat");
  if ((await page.$$(".msg")).length !== 0) fail("New chat left messages");
  await page.reload({ waitUntil: "load" });
  await idle();
  if ((await page.$$(".msg")).length !== 0) fail("New chat was undone by a reload");
  step("new_chat");

  // 6. Text to 3D: generate, and see the viewer draw the mesh (pixels of the mesh's colour).
  await page.click("#tab-3d");
  if (with3d) {
    await page.waitForSelector("#t3d-form:not([hidden])", { timeout: 20000 });
    await page.type("#t3d-prompt", "a small wooden chair");
    await setField("t3d-steps", 2);
    await page.click("#t3d-generate");
    await page.waitForSelector('body[data-t3d="shown"], body[data-t3d="failed"]', { timeout: 180000 });
    const status = await page.$eval("#t3d-status", (e) => e.textContent);
    if (!(await page.$('body[data-t3d="shown"]'))) fail("the 3D tab failed: " + status);
    const drawn = await page.$eval("#t3d-canvas", (c) => {
      const w = c.width, h = c.height, copy = document.createElement("canvas");
      copy.width = w; copy.height = h;
      const g = copy.getContext("2d");
      g.drawImage(c, 0, 0);
      const d = g.getImageData(0, 0, w, h).data;
      let mesh = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] > d[i + 1] + 40 && d[i] > d[i + 2] + 60) mesh++;
      return { mesh, pixels: w * h, triangles: Number(c.dataset.triangles) };
    });
    const preview = await page.$eval("#t3d-preview", (i) => ({ w: i.naturalWidth, h: i.naturalHeight }));
    step("text_to_3d", { drawn, preview, status });
    if (!(drawn.triangles > 0)) fail("the viewer loaded no triangles");
    if (drawn.mesh < 50) fail(`the viewer drew no mesh (${drawn.mesh} mesh-coloured pixels of ${drawn.pixels})`);
    if (!(preview.w > 0 && preview.h > 0)) fail("the preview PNG did not load");
    await page.screenshot({ path: path.join(outDir, "web-ui-3d.png") });
  } else {
    await page.waitForSelector("#t3d-unavailable:not([hidden])", { timeout: 20000 });
    const text = await page.$eval("#t3d-unavailable", (e) => e.textContent);
    if (!text.includes("--stages")) fail("the 3D tab does not say how to enable it: " + text);
    if (await page.$eval("#t3d-form", (f) => f.offsetParent !== null)) fail("the 3D form shows without a pipeline");
    step("text_to_3d_unavailable");
  }
  // The browser logs each 401 of the key dialog's steps as a failed load: expected there.
  const errors = consoleErrors.filter((e) => !(key && /status of 401/.test(e)));
  if (errors.length) fail("errors in the page: " + errors.join(" | "));
  result.ok = true;
} catch (e) {
  result.ok = false;
  result.error = e.message;
  exitCode = 1;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(exitCode);
