#!/usr/bin/env bash
# tracksum demo: the whole Track-then-Sum pipeline with the bin/tracksum-* binaries (make build).
#
#   make demo                                  # built-in synthetic sample, configs/default.yaml
#   make demo DATA=path/to/tracsum.jsonl       # real TracSum/PCoA data, configs/default.yaml
#   make demo CONFIG=configs/tiny.yaml         # tiny models (CI: about a minute)
#
# Steps: prepare (synthetic sample, or DATA), train the tracker, train the summarizer, run
# Track-then-Sum inference on the test split, evaluate; prints the metric table and where the HTML
# report is. Everything is written under OUT (default runs/demo, git-ignored), replaced each run.
# On the synthetic sample (no DATA) the demo must finish in 10 minutes on 2 cores, far less than the
# default models need to converge: it uses SAMPLE_SIZE synthetic abstracts (default 60) and caps the
# optimizer steps at DEMO_TRACKER_STEPS and DEMO_SUMMARIZER_STEPS (0 = no cap; the config's epochs
# and early stopping still apply). With DATA nothing is capped: the config decides.
set -euo pipefail

DATA="${DATA:-}"
CONFIG="${CONFIG:-configs/default.yaml}"
OUT="${OUT:-runs/demo}"
BIN="${BIN:-bin}"
SAMPLE_SIZE="${SAMPLE_SIZE:-60}"
DEMO_TRACKER_STEPS="${DEMO_TRACKER_STEPS:-300}"
DEMO_SUMMARIZER_STEPS="${DEMO_SUMMARIZER_STEPS:-200}"

for b in prepare train infer eval; do
	if [ ! -x "$BIN/tracksum-$b" ]; then
		echo "demo: $BIN/tracksum-$b not found: run 'make build' first" >&2
		exit 1
	fi
done
if [ -n "$DATA" ] && [ ! -f "$DATA" ]; then
	echo "demo: DATA=$DATA: no such file" >&2
	exit 1
fi

start=$(date +%s)
step() { echo; echo "== [$(($(date +%s) - start))s] $*"; }

rm -rf "$OUT"
mkdir -p "$OUT"

if [ -n "$DATA" ]; then
	step "prepare $DATA ($CONFIG)"
	"$BIN/tracksum-prepare" --config "$CONFIG" --input "$DATA" --out "$OUT/prepared"
else
	step "prepare the built-in synthetic sample ($SAMPLE_SIZE abstracts, $CONFIG)"
	TRACKSUM_PREPARE_SAMPLE_SIZE="$SAMPLE_SIZE" "$BIN/tracksum-prepare" --config "$CONFIG" --out "$OUT/prepared"
	# Environment overrides of the config (flag > env > file): only the step caps change.
	if [ "$DEMO_TRACKER_STEPS" != 0 ]; then export TRACKSUM_TRACKER_TRAIN_MAX_STEPS="$DEMO_TRACKER_STEPS"; fi
	if [ "$DEMO_SUMMARIZER_STEPS" != 0 ]; then export TRACKSUM_SUMMARIZER_TRAIN_MAX_STEPS="$DEMO_SUMMARIZER_STEPS"; fi
fi

step "train the tracker"
"$BIN/tracksum-train" --task tracker --config "$CONFIG" --data "$OUT/prepared" --out "$OUT/tracker"

step "train the summarizer"
"$BIN/tracksum-train" --task summarizer --config "$CONFIG" --data "$OUT/prepared" --out "$OUT/summarizer"

step "Track-then-Sum inference on the test split"
"$BIN/tracksum-infer" --config "$CONFIG" --tracker "$OUT/tracker" --summarizer "$OUT/summarizer" \
	--input "$OUT/prepared" --split test --out "$OUT/predictions.jsonl" --refs "$OUT/references.jsonl"

step "evaluate"
"$BIN/tracksum-eval" --config "$CONFIG" --pred "$OUT/predictions.jsonl" --ref "$OUT/references.jsonl" \
	--out "$OUT/eval" | tee "$OUT/metrics.txt"

echo
echo "demo: done in $(($(date +%s) - start))s"
echo "demo: predictions  $OUT/predictions.jsonl"
echo "demo: metric table $OUT/metrics.txt"
echo "demo: HTML report  $OUT/eval/report.html"
