// The official OpenAI Node client's Responses API against `ember serve`, unchanged: a response,
// the same streamed, and a refused field. Usage: node responses_client.mjs BASE_URL MODEL.
// Prints one JSON line.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0, timeout: 60000 });
const request = { model, input: "Say something.", instructions: "Be brief.", max_output_tokens: 12, temperature: 0 };

const plain = await client.responses.create(request);
const stream = await client.responses.create({ ...request, stream: true });
const types = [];
const sequence = [];
let deltas = "";
let final = null;
for await (const event of stream) {
  types.push(event.type);
  sequence.push(event.sequence_number);
  if (event.type === "response.output_text.delta") deltas += event.delta;
  if (event.type === "response.completed" || event.type === "response.incomplete") final = event.response;
}
let badRequest = null;
try {
  await client.responses.create({ model, input: "hi", tools: [{ type: "function", name: "f", parameters: {} }] });
} catch (e) {
  badRequest = { status: e.status, param: e.param ?? e.error?.param ?? null, code: e.code ?? e.error?.code ?? null };
}
console.log(JSON.stringify({
  plain: { id: plain.id, object: plain.object, status: plain.status, output_text: plain.output_text, usage: plain.usage,
           output: plain.output },
  stream: { types, sequence, deltas, final_status: final?.status ?? null, final_text: final?.output?.[0]?.content?.[0]?.text ?? null,
            final_usage: final?.usage ?? null },
  badRequest,
}));
