// The official OpenAI Node client against `ember serve`, unchanged: a chat completion, a streamed
// one and a text completion. Usage: node openai_client.mjs BASE_URL MODEL. Prints one JSON line.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 60000 });
const messages = [{ role: "user", content: "Say something." }];

const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
let streamed = "";
let finish = null;
let chunks = 0;
let usage = null;
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
const completion = await client.completions.create({ model, prompt: "Once upon", max_tokens: 6, temperature: 0 });
const models = await client.models.list();
let badRequest = null;
try {
  await client.chat.completions.create({ model, messages: [], max_tokens: 4 });
} catch (e) {
  badRequest = { status: e.status, type: e.type ?? e.error?.type ?? null, param: e.param ?? e.error?.param ?? null };
}
console.log(JSON.stringify({
  chat: { id: chat.id, object: chat.object, content: chat.choices[0].message.content, role: chat.choices[0].message.role,
          finish: chat.choices[0].finish_reason, usage: chat.usage },
  stream: { content: streamed, finish, chunks, usage },
  completion: { object: completion.object, text: completion.choices[0].text },
  models: models.data.map((m) => m.id),
  badRequest,
}));
