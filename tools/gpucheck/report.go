package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tracksum/tracksum/hf/plan"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/internal/cli"
)

func reportCommand() cli.Command {
	fs := cli.NewFlags("gpucheck report")
	fs.String("in", "", "the results so far, one JSON object per line (scripts/gpu-check.sh's gpu-check.jsonl)")
	fs.String("json", "", "gpu-check.json to write")
	fs.String("md", "", "gpu-check.md to write")
	return cli.Command{
		Name: "gpucheck report", Synopsis: "--in FILE.jsonl --json FILE --md FILE", Flags: fs,
		Description: "Renders the check's results (after each step, so that a timeout still leaves a report).",
		Run: func(_ context.Context, args []string) error {
			in, _ := fs.GetString("in")
			js, _ := fs.GetString("json")
			md, _ := fs.GetString("md")
			if in == "" || js == "" || md == "" || len(args) > 0 {
				return cli.Usagef("--in, --json and --md are required")
			}
			rows, err := readRows(in)
			if err != nil {
				return err
			}
			if err := atomicio.WriteJSON(js, map[string]any{"results": rows}); err != nil {
				return err
			}
			return atomicio.WriteFile(md, []byte(markdown(rows)), 0o644)
		},
	}
}

func readRows(path string) ([]map[string]any, error) {
	var rows []map[string]any
	// atomicio's line reader, but not its JSONL decoder: lines that are not JSON are skipped.
	for l, err := range atomicio.Lines(path, 0) {
		if err != nil {
			return nil, err
		}
		line := bytes.TrimSpace(l.Data)
		if !bytes.HasPrefix(line, []byte("{")) {
			continue // a step's stray output: its log has it
		}
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, l.Num, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// markdown renders the rows: the steps' statuses first, then one table per kind of result.
func markdown(rows []map[string]any) string {
	var b strings.Builder
	b.WriteString("# tracksum GPU check\n\n")
	for _, r := range rows {
		if r["step"] == "env" {
			fmt.Fprintf(&b, "- %s: %v\n", r["key"], r["value"])
		}
	}
	b.WriteString("\n## Steps\n\n| step | status | seconds | note |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		if r["step"] == "status" {
			fmt.Fprintf(&b, "| %v | %v | %.0f | %v |\n", r["name"], r["status"], num(r["seconds"]), str(r["note"]))
		}
	}
	section := func(step, title string, cols []string) {
		var sel []map[string]any
		for _, r := range rows {
			if r["step"] == step {
				sel = append(sel, r)
			}
		}
		if len(sel) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n| %s |\n|%s\n", title, strings.Join(cols, " | "), strings.Repeat(" --- |", len(cols)))
		for _, r := range sel {
			cells := make([]string, len(cols))
			for i, c := range cols {
				cells[i] = cell(c, r[c])
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	section("parity", "Parity with the float32 PyTorch goldens (max |diff|)", []string{"family", "tf32", "hidden_max_abs_diff", "logits_max_abs_diff", "lora_logits_max_abs_diff", "loss_abs_diff", "ok"})
	section("decode", "From-scratch summarizer decoding: the backend's graphs against the go backend's", []string{"backend", "sources", "tokens", "walk_max_prob_diff", "beam_identical_sources", "first_search_seconds", "tokens_per_sec", "ok"})
	section("nli", "The nli judge on synthetic pairs: the backend against the go backend, and its speed", []string{"backend", "model", "pairs", "max_prob_diff", "seconds", "pairs_per_sec", "batches", "graphs", "ok"})
	section("snapshot", "Random snapshots", []string{"shape", "detail", "vocab", "dtype", "seconds"})
	section("train", "LoRA steps (tracksum)", []string{"task", "snapshot", "precision", "quantization", "gradient_checkpointing", "batch", "max_seq_len", "doc_words", "steps", "first_step_seconds", "tokens_per_sec", "steady_tokens_per_sec", "first_loss", "train_loss", "dev_loss", "mfu", "peak_rss_bytes", "plan_total_bytes", "ok"})
	section("reference", "LoRA steps (transformers + PEFT; bf16 LoRA for an nf4 run: no bitsandbytes there)", []string{"task", "snapshot", "device", "dtype", "gradient_checkpointing", "batch", "max_seq_len", "steps", "same_batches", "tokens_per_sec", "first_loss", "ours_first_loss", "first_loss_rel_diff", "mfu", "peak_bytes", "ok"})
	section("generate", "Summarizer generation (tracksum)", []string{"precision", "batch", "beam", "max_new_tokens", "prompt_tokens_mean", "new_tokens", "seconds", "tokens_per_sec", "ok"})
	section("hf_generate", "Summarizer generation (transformers' generate, same prompts)", []string{"dtype", "batch", "beam", "max_new_tokens", "new_tokens", "seconds", "tokens_per_sec", "identical_greedy", "compared", "first_divergence", "ok"})
	section("gpu_memory", "GPU memory in use during each step (nvidia-smi, sampled every 200 ms)", []string{"name", "peak_used_bytes", "total_bytes"})
	section("peft", "PEFT and transformers load our adapter and export (logits vs ours)", []string{"checkpoint", "what", "max_abs_diff", "tolerance", "ok"})
	section("parquet", "Prepared shards read with pyarrow", []string{"file", "rows", "columns", "ok"})
	b.WriteString("\nGB = 10^9 bytes, GiB = 2^30 bytes.\n")
	return b.String()
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return strings.ReplaceAll(fmt.Sprint(v), "|", "/")
}

// cell writes a value: byte counts with their units, small differences in scientific notation.
func cell(col string, v any) string {
	f, isNum := v.(float64)
	switch {
	case v == nil:
		return ""
	case isNum && strings.HasSuffix(col, "_bytes"):
		return plan.Bytes(int64(f))
	case isNum && strings.Contains(col, "diff"):
		return fmt.Sprintf("%.2g", f)
	case isNum && slices.Contains([]string{"tokens_per_sec", "steady_tokens_per_sec", "train_loss", "dev_loss", "first_loss", "ours_first_loss", "mfu", "first_step_seconds", "seconds", "first_search_seconds"}, col):
		return fmt.Sprintf("%.4g", f)
	}
	return str(v)
}
