// Tool calling with the official OpenAI Node client against `ember serve`, unchanged: a forced call
// (tool_choice "required") parsed into tool_calls, the tool's result fed back in a second request,
// and both streamed. Usage: node openai_tools.mjs BASE_URL MODEL. Prints one JSON line.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 120000 });
const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", enum: ["Paris", "Tokyo"] }, days: { type: "integer" } },
      required: ["city"],
    },
  },
}];
const messages = [{ role: "user", content: "Weather in Paris?" }];
const common = { model, tools, max_tokens: 40, temperature: 0 };

// Accumulates a streamed answer as the SDK's users do: content, and tool calls by index.
async function collect(stream) {
  let content = "";
  let finish = null;
  const calls = [];
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    for (const c of chunk.choices) {
      content += c.delta?.content ?? "";
      for (const t of c.delta?.tool_calls ?? []) {
        calls[t.index] ??= { id: null, type: null, name: "", arguments: "" };
        if (t.id) calls[t.index].id = t.id;
        if (t.type) calls[t.index].type = t.type;
        calls[t.index].name += t.function?.name ?? "";
        calls[t.index].arguments += t.function?.arguments ?? "";
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { content, finish, calls, chunks };
}

const first = await client.chat.completions.create({ ...common, messages, tool_choice: "required" });
const msg = first.choices[0].message;
const firstStream = await collect(await client.chat.completions.create({ ...common, messages, tool_choice: "required", stream: true }));

// The call and its result go back in, as an agent loop sends them.
const followUp = [...messages, { role: "assistant", content: msg.content, tool_calls: msg.tool_calls }];
for (const call of msg.tool_calls ?? [])
  followUp.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ city: JSON.parse(call.function.arguments).city, temp_c: 21 }) });
const second = await client.chat.completions.create({ ...common, messages: followUp, max_tokens: 8 });
const secondStream = await collect(await client.chat.completions.create({ ...common, messages: followUp, max_tokens: 8, stream: true }));

// A named function, one call.
const named = await client.chat.completions.create({
  ...common, messages, tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false,
});

let badRequest = null;
try {
  await client.chat.completions.create({ ...common, messages, tool_choice: { type: "function", function: { name: "nope" } } });
} catch (e) {
  badRequest = { status: e.status, param: e.param ?? e.error?.param ?? null };
}

console.log(JSON.stringify({
  first: { finish: first.choices[0].finish_reason, content: msg.content, tool_calls: msg.tool_calls ?? null, usage: first.usage },
  firstStream,
  second: { finish: second.choices[0].finish_reason, content: second.choices[0].message.content,
            tool_calls: second.choices[0].message.tool_calls ?? null, prompt_tokens: second.usage.prompt_tokens },
  secondStream,
  named: { finish: named.choices[0].finish_reason, tool_calls: named.choices[0].message.tool_calls ?? null },
  badRequest,
}));
