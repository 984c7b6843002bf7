// Reads a prepared directory with DuckDB, a Parquet reader independent of parquet-go, the way a
// Hugging Face datasets user would find it: every config and split of the dataset card (README.md)
// is read through its data_files glob, and must give the rows, positives and columns that
// manifest.json and the card state. Usage: node check.mjs PREPARED_DIR. Exits 1 at the first
// disagreement (dataset/prepare's TestShardsReadByDuckDB runs it).
import { DuckDBInstance } from "@duckdb/node-api";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
const card = readFileSync(join(dir, "README.md"), "utf8");
const con = await (await DuckDBInstance.create(":memory:")).connect();

function fail(msg) {
  console.log(`FAIL ${msg}`);
  process.exit(1);
}

// The card's YAML header: config_name, then "- split: S" / "path: P" pairs.
const header = card.split("---\n")[1] ?? fail("README.md has no YAML header");
const files = []; // {task, split, glob}
let task = null, split = null;
for (const line of header.split("\n")) {
  let m;
  if ((m = line.match(/^- config_name: (\S+)$/))) task = m[1];
  else if ((m = line.match(/^\s+- split: (\S+)$/))) split = m[1];
  else if ((m = line.match(/^\s+path: (\S+)$/))) files.push({ task, split, glob: m[1] });
}
// The card's column tables: "## task" then "| `name` | type | ... |".
const columns = {};
let section = null;
for (const line of card.split("\n")) {
  let m;
  if ((m = line.match(/^## (\S+)$/))) section = m[1];
  else if (section && (m = line.match(/^\| `([a-z_]+)` \| ([a-z0-9<>]+) \|/))) (columns[section] ??= []).push([m[1], m[2]]);
}
const duck = { string: "VARCHAR", int32: "INTEGER", bool: "BOOLEAN", float: "FLOAT", "list<int32>": "INTEGER[]", "list<string>": "VARCHAR[]" };
const positive = {
  tracker: "sum(label::INTEGER)", sum_then_track: "sum(label::INTEGER)",
  summarizer: "count(*)", end_to_end: "count(*) FILTER (WHERE len(citations) > 0)",
};

let checked = 0;
for (const { task, split, glob } of files) {
  const want = manifest.tasks?.[task]?.splits?.[split] ?? fail(`${task}/${split}: in the card, not in manifest.json`);
  for (const sh of want.shards) {
    if (!/^[a-z_]+\/[a-z]+-\d{5}-of-\d{5}\.parquet$/.test(sh.path)) fail(`${sh.path}: not named <split>-NNNNN-of-MMMMM.parquet`);
  }
  const src = `read_parquet('${join(dir, glob).replaceAll("'", "''")}')`;
  const r = (await con.runAndReadAll(`SELECT count(*)::BIGINT AS n, (${positive[task]})::BIGINT AS pos FROM ${src}`)).getRowObjectsJson()[0];
  if (Number(r.n) !== want.rows || Number(r.pos) !== want.positives) {
    fail(`${task}/${split}: DuckDB reads ${r.n} rows, ${r.pos} positive; manifest.json says ${want.rows}, ${want.positives}`);
  }
  const got = (await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRowObjectsJson().map((c) => [c.column_name, c.column_type]);
  const card = (columns[task] ?? []).map(([n, t]) => [n, duck[t] ?? t]);
  if (JSON.stringify(got) !== JSON.stringify(card)) fail(`${task}/${split}: columns ${JSON.stringify(got)}, the card says ${JSON.stringify(card)}`);
  checked++;
}
if (checked === 0) fail("no data_files in the card");
console.log(`duckdb: ${checked} task/split globs read, rows, positives and columns as manifest.json and README.md say`);
