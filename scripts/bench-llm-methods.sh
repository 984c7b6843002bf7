#!/usr/bin/env bash
# Runs every LLM method of tracksum over a TracSum JSONL file through a local tracksum-serve (tiny
# checkpoints trained on the same data with configs/tiny.yaml), twice: the first pass measures wall
# time and the server's requests, the second the cache (it must send no request). Then scores each
# method's predictions with tracksum-eval. The served seq2seq model cannot follow instructions, so
# the scores measure the plumbing, not the methods; a real model behind an OpenAI-compatible
# endpoint is the way to reproduce the papers' figures.
#
#   scripts/bench-llm-methods.sh [DATA.jsonl]       (BIN=bin OUT=runs/llm-bench PORT=18123)
set -euo pipefail
DATA=${1:-../shared/data/tracsum/tracsum-dev.jsonl}
BIN=${BIN:-bin}; OUT=${OUT:-runs/llm-bench}; PORT=${PORT:-18123}; C=configs/tiny.yaml
[ -f "$DATA" ] || { echo "bench-llm-methods: $DATA not found (pass a TracSum JSONL file)" >&2; exit 1; }
mkdir -p "$OUT"
[ -d "$OUT/prep" ] || "$BIN/tracksum-prepare" --config $C --input "$DATA" --out "$OUT/prep" --quiet
[ -d "$OUT/trk" ] || "$BIN/tracksum-train" --config $C --task tracker --data "$OUT/prep" --out "$OUT/trk" 2>"$OUT/train-trk.log"
[ -d "$OUT/sum" ] || "$BIN/tracksum-train" --config $C --task summarizer --data "$OUT/prep" --out "$OUT/sum" 2>"$OUT/train-sum.log"
"$BIN/tracksum-serve" --summarizer "$OUT/sum" --tracker "$OUT/trk" --listen 127.0.0.1:$PORT --model-name tiny \
    --workers 2 --queue 64 2>"$OUT/serve.log" &
SP=$!
trap 'kill $SP 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/health >/dev/null 2>&1 && break; sleep 0.2; done
export TRACKSUM_EVAL_LLM_BASE_URL=http://127.0.0.1:$PORT/v1 TRACKSUM_EVAL_LLM_MODEL=tiny \
    TRACKSUM_EVAL_LLM_CACHE_DIR="$OUT/cache" TRACKSUM_EVAL_LLM_CONCURRENCY=4
rm -rf "$OUT/cache" "$OUT/runs"; mkdir -p "$OUT/runs"
served() { grep -c '"path":"/v1/chat/completions"' "$OUT/serve.log" || true; }
now() { date +%s.%N; }
METHODS="prompt intrinsic prior posthoc tts-llm refine"
for pass in 1 2; do
  for m in $METHODS; do
    case $m in
      tts-llm) args=(--tracker llm --summarizer llm) ;;
      refine) args=(--tracker "$OUT/trk" --summarizer "$OUT/sum" --refine 1) ;;
      *) args=(--method $m) ;;
    esac
    n0=$(served); s=$(now)
    "$BIN/tracksum-infer" --config $C "${args[@]}" --llm-model tiny --demos "$OUT/prep" --input "$DATA" \
        --out "$OUT/runs/$m-$pass.jsonl" 2>"$OUT/runs/$m-$pass.log"
    e=$(now); n=$(( $(served) - n0 ))
    awk -v p=$pass -v m=$m -v s=$s -v e=$e -v n=$n 'BEGIN{w=e-s; printf "pass %d %-9s wall %6.2f s  server requests %5d  (%.0f requests/s)\n", p, m, w, n, n/w}'
  done
  n0=$(served); s=$(now)
  "$BIN/tracksum-eval" --config $C --pred "$OUT/runs/intrinsic-$pass.jsonl" --ref "$DATA" --metric fm,qa --allow-malformed \
      --out "$OUT/runs/eval-fmqa-$pass" >"$OUT/runs/eval-fmqa-$pass.txt" 2>"$OUT/runs/eval-fmqa-$pass.log"
  e=$(now); n=$(( $(served) - n0 ))
  awk -v p=$pass -v s=$s -v e=$e -v n=$n 'BEGIN{w=e-s; printf "pass %d %-9s wall %6.2f s  server requests %5d\n", p, "eval fm,qa", w, n}'
done
for m in $METHODS; do
  "$BIN/tracksum-eval" --config $C --pred "$OUT/runs/$m-1.jsonl" --ref "$DATA" --out "$OUT/runs/eval-$m" \
      >"$OUT/runs/eval-$m.txt" 2>/dev/null
  echo "$m: $(grep -E '^ +(claim_recall|claim_precision|citation_recall|citation_precision|rougeL_f) ' \
      "$OUT/runs/eval-$m.txt" | awk '{printf "%s %s  ", $1, $2}')"
done
