// The official OpenAI Node client against `ember serve`: n = 2 choices (plain and streamed,
// seeded) and a second chat turn whose usage reports the prompt tokens a slot's caches gave.
// Usage: node openai_slots.mjs BASE_URL MODEL. Prints one JSON line.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 60000 });
const ask = [{ role: "user", content: "Name two colours." }];
const sampling = { model, max_tokens: 10, temperature: 1, top_p: 1, seed: 77 };

const plain = await client.chat.completions.create({ ...sampling, messages: ask, n: 2 });
const streamedText = ["", ""];
const streamedFinish = [null, null];
let streamedUsage = null;
const stream = await client.chat.completions.create({
  ...sampling, messages: ask, n: 2, stream: true, stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  if (chunk.usage) streamedUsage = chunk.usage;
  for (const c of chunk.choices) {
    streamedText[c.index] += c.delta?.content ?? "";
    if (c.finish_reason) streamedFinish[c.index] = c.finish_reason;
  }
}
const completion = await client.completions.create({ ...sampling, prompt: "Once upon", n: 2 });

// Two turns of one conversation, greedy: the second starts with the first and its reply.
const turn1 = await client.chat.completions.create({ model, messages: ask, max_tokens: 8, temperature: 0 });
const history = [...ask, { role: "assistant", content: turn1.choices[0].message.content }, { role: "user", content: "And a third?" }];
const turn2 = await client.chat.completions.create({ model, messages: history, max_tokens: 8, temperature: 0 });

console.log(JSON.stringify({
  plain: {
    choices: plain.choices.map((c) => ({ index: c.index, content: c.message.content, finish: c.finish_reason })),
    usage: plain.usage,
  },
  stream: { content: streamedText, finish: streamedFinish, usage: streamedUsage },
  completion: { choices: completion.choices.map((c) => ({ index: c.index, text: c.text })), usage: completion.usage },
  turn1: { usage: turn1.usage },
  turn2: { content: turn2.choices[0].message.content, usage: turn2.usage },
}));
