// Drives a running tracksum-serve with the official openai npm client: list, retrieve, chat,
// streaming chat, text completions and the errors an SDK user meets. Usage:
//   node check.mjs BASE_URL MODEL PROMPT_FILE
// Prints one line per check and exits 1 at the first failure (serve's TestOpenAIClient runs it).
import OpenAI from "openai";
import { readFileSync } from "node:fs";

const [baseURL, model, promptFile] = process.argv.slice(2);
const prompt = readFileSync(promptFile, "utf8");
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });

function check(name, ok, detail) {
  if (!ok) {
    console.log(`FAIL ${name}: ${detail}`);
    process.exit(1);
  }
  console.log(`ok   ${name}`);
}

async function expectError(name, fn, status) {
  try {
    await fn();
    check(name, false, "no error");
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status === status && typeof e.message === "string",
      `${e?.constructor?.name} status ${e?.status}: ${e?.message}`);
  }
}

const list = await client.models.list();
check("models.list", list.data.length === 1 && list.data[0].id === model, JSON.stringify(list.data));
const m = await client.models.retrieve(model);
check("models.retrieve", m.id === model && m.object === "model", JSON.stringify(m));

const messages = [{ role: "system", content: "You summarize." }, { role: "user", content: prompt }];
const chat = await client.chat.completions.create({ model, messages });
const text = chat.choices[0].message.content;
check("chat", /^Summary: /.test(text) && chat.usage.completion_tokens > 0, JSON.stringify(chat));

const stream = await client.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
let streamed = "", finish = null, usage = null;
for await (const chunk of stream) {
  if (chunk.choices.length > 0) {
    streamed += chunk.choices[0].delta.content ?? "";
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  usage = chunk.usage ?? usage;
}
check("chat stream", streamed === text && finish === "stop" && usage?.total_tokens === chat.usage.total_tokens,
  `${JSON.stringify(streamed)} vs ${JSON.stringify(text)}, finish ${finish}, usage ${JSON.stringify(usage)}`);

const short = await client.chat.completions.create({ model, messages, max_tokens: 5 });
check("chat max_tokens", short.usage.completion_tokens <= 5 && short.choices[0].finish_reason === "length",
  JSON.stringify(short));

const cmpl = await client.completions.create({ model, prompt });
check("completions", cmpl.object === "text_completion" && cmpl.choices[0].text === text, JSON.stringify(cmpl));

await expectError("unknown model is 404", () => client.chat.completions.create({ model: "gpt-x", messages }), 404);
await expectError("models.retrieve of an unknown id is 404", () => client.models.retrieve("gpt-x"), 404);
await expectError("response_format is 400", () => client.chat.completions.create({ model, messages, response_format: { type: "json_object" } }), 400);
await expectError("tools is 400", () => client.chat.completions.create({ model, messages,
  tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] }), 400);
await expectError("unknown route is 404", () => client.embeddings.create({ model, input: "x" }), 404);
console.log("openai client: all checks passed");
