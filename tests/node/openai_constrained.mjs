// Structured output, logit_bias and logprobs through the official OpenAI Node client against
// `ember serve` on a random-weight model (so only the grammar makes output parse).
// Usage: node openai_constrained.mjs BASE_URL MODEL QUOTE_ID BRACE_ID X_ID, the ids of the
// tokens '"', '}' and 'x'. Prints one JSON line of findings; the C++ test judges them.
import OpenAI from "openai";

const [baseURL, model, quoteId, braceId, xId] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 120000 });
const messages = [{ role: "user", content: "Describe a thing." }];

// A validator for the schema keywords the test uses (independent of the server's compiler).
function valid(v, s) {
  if (s.const !== undefined && JSON.stringify(v) !== JSON.stringify(s.const)) return false;
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return false;
  if (s.anyOf && !s.anyOf.some((sub) => valid(v, sub))) return false;
  if (s.type) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const is = (t) => (t === "string" && typeof v === "string") || (t === "integer" && Number.isInteger(v)) ||
      (t === "number" && typeof v === "number") || (t === "boolean" && typeof v === "boolean") || (t === "null" && v === null) ||
      (t === "object" && v !== null && typeof v === "object" && !Array.isArray(v)) || (t === "array" && Array.isArray(v));
    if (!types.some(is)) return false;
  }
  if (typeof v === "string" && s.maxLength !== undefined && [...v].length > s.maxLength) return false;
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) return false;
    if (s.minItems !== undefined && v.length < s.minItems) return false;
    if (s.items && !v.every((e) => valid(e, s.items))) return false;
  }
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    for (const r of s.required ?? []) if (!(r in v)) return false;
    for (const [k, e] of Object.entries(v)) {
      if (s.properties && k in s.properties) { if (!valid(e, s.properties[k])) return false; }
      else if (s.additionalProperties === false) return false;
    }
  }
  return true;
}

async function streamed(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let content = "", finish = null, logprobs = [];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      content += c.delta?.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
      if (c.logprobs?.content) logprobs.push(...c.logprobs.content);
    }
  }
  return { content, finish, logprobs };
}

async function plain(params) {
  const r = await client.chat.completions.create(params);
  return { content: r.choices[0].message.content, finish: r.choices[0].finish_reason, logprobs: r.choices[0].logprobs?.content ?? [],
           usage: r.usage };
}

const out = {};

// 1. json_schema: 100 seeded completions (96 plain, 4 streamed), all must parse and validate.
const schema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 4 },
    age: { type: "integer" },
    color: { enum: ["red", "green", "blue"] },
    ok: { type: "boolean" },
    tags: { type: "array", items: { type: "string", maxLength: 2 }, maxItems: 2 },
    ref: { anyOf: [{ type: "null" }, { const: 7 }] },
  },
  required: ["name", "age", "color", "ok", "tags", "ref"],
  additionalProperties: false,
};
const response_format = { type: "json_schema", json_schema: { name: "thing", schema, strict: true } };
const results = [];
for (let base = 0; base < 100; base += 10) {
  results.push(...await Promise.all(Array.from({ length: 10 }, (_, i) => {
    const params = { model, messages, max_tokens: 256, temperature: 1, seed: base + i, response_format };
    return base + i < 96 ? plain(params) : streamed(params);
  })));
}
const bad = [];
let parsed = 0, validated = 0;
for (const r of results) {
  let doc;
  try { doc = JSON.parse(r.content); parsed++; } catch { bad.push(r); continue; }
  if (valid(doc, schema)) validated++; else bad.push(r);
}
out.jsonSchema = { count: results.length, parsed, validated, finishes: [...new Set(results.map((r) => r.finish))], bad: bad.slice(0, 3) };

// 2. json_object, with logit_bias pulling '"' and '}' up so that a random model closes what it opens.
const bias = { [quoteId]: 8, [braceId]: 8 };
const objs = [];
for (const stream of [false, true]) for (const seed of [1, 2]) {
  const params = { model, messages, max_tokens: 200, temperature: 1, seed, response_format: { type: "json_object" }, logit_bias: bias };
  objs.push(await (stream ? streamed(params) : plain(params)));
}
out.jsonObject = objs.map((r) => {
  try { const v = JSON.parse(r.content); return { ok: v !== null && typeof v === "object" && !Array.isArray(v), finish: r.finish }; }
  catch { return { ok: false, finish: r.finish, content: r.content }; }
});

// 3. The GBNF `grammar` field (not in the SDK's types; the client passes it through).
const grammar = 'root ::= "yes" | "no" | "maybe " [0-9]{1,3}';
const gram = [];
for (const stream of [false, true]) for (const seed of [3, 4, 5]) {
  const params = { model, messages, max_tokens: 16, temperature: 1, seed, grammar };
  gram.push(await (stream ? streamed(params) : plain(params)));
}
out.grammar = gram.map((r) => ({ content: r.content, finish: r.finish }));

// 4. logit_bias alone: +100 on 'x' makes every token 'x'.
const xs = [];
for (const stream of [false, true])
  xs.push(await (stream ? streamed : plain)({ model, messages, max_tokens: 6, temperature: 1, seed: 9, logit_bias: { [xId]: 100 } }));
out.logitBias = xs.map((r) => r.content);

// 5. Chat logprobs with top_logprobs, plain and streamed (greedy: the two agree).
const lpParams = { model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 };
const lpPlain = await plain(lpParams), lpStream = await streamed(lpParams);
out.chatLogprobs = { plain: lpPlain, stream: lpStream };

// 6. Completions (legacy) logprobs, plain and streamed.
const cParams = { model, prompt: "Once upon", max_tokens: 6, temperature: 0, logprobs: 2 };
const cPlain = await client.completions.create(cParams);
const cStream = await client.completions.create({ ...cParams, stream: true });
const cChunks = [];
for await (const chunk of cStream) if (chunk.choices[0]?.logprobs) cChunks.push(chunk.choices[0].logprobs);
out.completionLogprobs = { text: cPlain.choices[0].text, plain: cPlain.choices[0].logprobs, streamChunks: cChunks };

// 7. An unsupported schema keyword is a 400 naming it.
try {
  await client.chat.completions.create({ model, messages, max_tokens: 4,
    response_format: { type: "json_schema", json_schema: { name: "p", schema: { type: "string", pattern: "a+" } } } });
  out.unsupported = { status: 200 };
} catch (e) {
  out.unsupported = { status: e.status, param: e.param ?? e.error?.param ?? null, message: e.message };
}

console.log(JSON.stringify(out));
