#!/usr/bin/env bash
# tracksum GPU check (docs/gpu.md): everything a lent GPU should tell us, in one run of a few minutes.
#
#   scripts/gpu-check.sh                    # on a CUDA machine: XLA CUDA via JAX's PJRT plugin
#   GPU_CHECK_CPU=1 scripts/gpu-check.sh    # every step that needs no CUDA, tiny shapes, go backend
#
# Needs the stripped Go side, built where Go is (the GPU machine has none):
#   GOEXPERIMENT=simd go build -ldflags "-s -w" -o gpucheck/bin/gpucheck ./tools/gpucheck
# and, for real prompts, the Llama 3.1 tokenizer files (tools/hftokenizer/fetch.sh) in
# hf/tokenizer/testdata/hf/llama3 (else randsnap's byte-level tokenizer).
#
# Steps, in order of value, each under its own `timeout` (a step that runs out is recorded as such
# and the next one starts): (b) every decoder family's parity goldens on the backend; (a) random
# snapshots of real shapes (each when a run first needs it); (c) LoRA steps of the generative
# tracker and the summarizer (tokens/s, losses, peak memory, the memory plan beside it); (e) PEFT and transformers load our adapter and
# our merged export, logits compared with ours; (d) the same LoRA steps with transformers + PEFT;
# (f) the prepared Parquet shards read with pyarrow. After each step (g) gpu-check.json and
# gpu-check.md are rewritten in OUT (default ./gpu-check-out), so a run cut short still reports what
# ran. Python steps whose packages are absent say "skipped" and why. Before the training runs: the
# from-scratch summarizer's decoding and the nli judge, each against the go backend.
set -uo pipefail

OUT="${OUT:-./gpu-check-out}"
BIN="${GPUCHECK_BIN:-gpucheck/bin/gpucheck}"
PY="${PYTHON:-python3}"
TOKENIZER="${TOKENIZER:-hf/tokenizer/testdata/hf/llama3}"
CPU="${GPU_CHECK_CPU:-0}"
export PYTHONUNBUFFERED=1

if [ ! -x "$BIN" ]; then
	echo "gpu-check: $BIN not found: build it with" >&2
	echo '  GOEXPERIMENT=simd go build -ldflags "-s -w" -o gpucheck/bin/gpucheck ./tools/gpucheck' >&2
	exit 1
fi
mkdir -p "$OUT"
# Snapshots and checkpoints (GBs on a GPU): keep WORK outside OUT where OUT is sent back.
WORK="${WORK:-$OUT/work}"
mkdir -p "$WORK"
RES="$OUT/gpu-check.jsonl"
LOG="$OUT/gpu-check.log"
: >"$RES"
: >"$LOG"
start=$(date +%s)

render() { "$BIN" report --in "$RES" --json "$OUT/gpu-check.json" --md "$OUT/gpu-check.md" >>"$LOG" 2>&1; }
env_row() { printf '{"step":"env","key":"%s","value":"%s"}\n' "$1" "$(printf '%s' "$2" | tr -d '"\\' | tr '\n' ' ')" >>"$RES"; }

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND under timeout, its stdout's JSON lines into the
# results and everything into the log, then a status row and the re-rendered report.
step() {
	local name=$1 limit=$2
	shift 2
	local t0 out rc status
	t0=$(date +%s)
	echo "== [$((t0 - start))s] $name (limit ${limit}s)" | tee -a "$LOG" >&2
	out=$(timeout --kill-after=10 "$limit" "$@" 2>>"$LOG")
	rc=$?
	printf '%s\n' "$out" | grep '^{' >>"$RES"
	printf '%s\n' "$out" >>"$LOG"
	case $rc in
	0) status=ok ;;
	124 | 137) status="timeout after ${limit}s" ;;
	*) status="failed (exit $rc)" ;;
	esac
	# A Python step without its packages prints {"step": "skip", "skipped": "REASON"}.
	if [ $rc -eq 0 ] && printf '%s' "$out" | grep -q '"step": "skip"'; then
		status="skipped: $(printf '%s' "$out" | sed -n 's/.*"skipped": "\([^"]*\)".*/\1/p' | head -1)"
	fi
	printf '{"step":"status","name":"%s","status":"%s","seconds":%d}\n' "$name" "$status" "$(($(date +%s) - t0))" >>"$RES"
	render
	return $rc
}

env_row date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
env_row commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$CPU" = 1 ]; then
	export GOMLX_BACKEND=go
	env_row mode "CPU (GPU_CHECK_CPU=1): go backend, tiny shapes"
else
	env_row mode "GPU: XLA CUDA through JAX's PJRT plugin"
	env_row gpu "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
	# JAX's CUDA plugin, loaded by absolute path (go-xla then skips its search and auto-install);
	# the CUDA data (ptxas, libdevice) and libraries are in the nvidia wheels next to it.
	plugin=$("$PY" -c 'import glob, os, jax_plugins; print(next(iter(sorted(p for d in jax_plugins.__path__ for p in glob.glob(os.path.join(d, "**", "xla_cuda_plugin.so"), recursive=True))), ""))' 2>>"$LOG")
	site=$("$PY" -c 'import site; print(site.getsitepackages()[0])' 2>>"$LOG")
	if [ -z "$plugin" ]; then
		env_row plugin "xla_cuda_plugin.so not found (jax-cuda13-pjrt absent?): stopping"
		render
		exit 1
	fi
	export GOMLX_BACKEND="xla:$plugin" GOMLX_NO_AUTO_INSTALL=1
	for cu in "$site"/nvidia/cu13 "$site"/nvidia/cuda_nvcc; do
		if [ -d "$cu" ]; then
			export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_cuda_data_dir=$cu"
			break
		fi
	done
	libs=$(find "$site/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | tr '\n' ':')
	export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:-}"
	env_row plugin "$plugin"
	env_row xla_flags "${XLA_FLAGS:-}"
fi
env_row backend "$GOMLX_BACKEND"
# The card's dense bf16 peak (TFLOP/s, the vendor's datasheet without sparsity) for the MFU of the
# training runs (docs/gpu.md's FLOP count); none on an unknown card or in CPU mode.
peak_tflops=0
if [ "$CPU" != 1 ]; then
	case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
	*H100* | *H200* | *H800* | *H20*) peak_tflops=989.4 ;;
	*A100* | *A800*) peak_tflops=312 ;;
	*L40S*) peak_tflops=362 ;;
	esac
	env_row peak_bf16_tflops "$peak_tflops"
fi
# Comparisons with float32 references run without TF32 (go-xla turns it on for float32 matmuls on
# CUDA by default; the first check measured ~4e-3 differences with it): EXACT is their backend.
EXACT="$GOMLX_BACKEND"
[ "$CPU" = 1 ] || EXACT="$GOMLX_BACKEND,tf32=false"
env_row python "$("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1); $("$PY" -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)' 2>&1 | tail -1)"
tok=()
if [ -s "$TOKENIZER/tokenizer.json" ] && [ -s "$TOKENIZER/tokenizer_config.json" ]; then
	tok=(--tokenizer "$TOKENIZER")
	env_row tokenizer "$TOKENIZER (Llama 3.1)"
else
	env_row tokenizer "randsnap's byte-level test tokenizer ($TOKENIZER absent)"
fi
render

# smi_start NAME / smi_stop: the GPU memory in use while a step runs (nvidia-smi every 200 ms; go-xla
# does not preallocate on CUDA, so its BFC allocator's growth shows), as a gpu_memory row.
smi_pid="" smi_name="" smi_file="$WORK/nvidia-smi.csv"
smi_start() {
	smi_name=$1
	[ "$CPU" = 1 ] && return 0
	command -v nvidia-smi >/dev/null || return 0
	nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits -lms 200 >"$smi_file" 2>/dev/null &
	smi_pid=$!
}
smi_stop() {
	[ -n "$smi_pid" ] || return 0
	kill "$smi_pid" 2>/dev/null
	wait "$smi_pid" 2>/dev/null
	smi_pid=""
	awk -F', *' -v name="$smi_name" '$1+0 > peak { peak = $1+0; total = $2+0 }
		END { if (peak > 0) printf "{\"step\":\"gpu_memory\",\"name\":\"%s\",\"peak_used_bytes\":%d,\"total_bytes\":%d}\n", name, peak*1048576, total*1048576 }' "$smi_file" >>"$RES"
	render
}

# GPU_CHECK_RUNS_ONLY=1 goes straight to the training runs (e.g. the full-depth 8B runs, which
# need the device time that parity, decode and nli would take).
if [ "${GPU_CHECK_RUNS_ONLY:-0}" != 1 ]; then
# (b) parity goldens of every family on the backend.
step "parity goldens (4 families, TF32 off)" 120 env GOMLX_BACKEND="$EXACT" "$BIN" parity
[ "$CPU" = 1 ] || step "parity goldens (4 families, TF32 on: go-xla's default)" 120 "$BIN" parity
# The from-scratch summarizer's graph decoding against the go backend's, and its speed.
step "summarizer decoding (graphs vs go backend)" 120 env GOMLX_BACKEND="$EXACT" "$BIN" decode
# The nli judge (issue 24): tiny DeBERTa over 2,700 synthetic pairs, about what the 544 TracSum dev
# instances ask (61-69 s on 2 CPU cores of the go backend: docs/eval.md), and a BERT-base-shaped
# judge; each compared with the go backend on its first pairs (TF32 off for both: EXACT).
if [ "$CPU" = 1 ]; then
	step "nli judge tiny-deberta" 120 env GOMLX_BACKEND="$EXACT" "$BIN" nli --work "$WORK" --model tiny-deberta --pairs 64 --parity 8
else
	step "nli judge tiny-deberta (2,700 pairs)" 180 env GOMLX_BACKEND="$EXACT" "$BIN" nli --work "$WORK" --model tiny-deberta
	step "nli judge bert-base (2,700 pairs)" 240 env GOMLX_BACKEND="$EXACT" "$BIN" nli --work "$WORK" --model bert-base --parity 8
fi
fi

# (c) our LoRA steps; (e) PEFT/transformers load them; (d) the reference steps.
# Each run is "task shape batch max_seq_len steps [precision [ckpt] [long] [nf4]]"; precision (f32, bf16,
# auto) and "ckpt" set TRACKSUM_<TASK>_TRAIN_PRECISION and _GRADIENT_CHECKPOINTING for that run (a
# build without those keys refuses them in one line); "nf4" sets _TRAIN_QUANTIZATION=nf4 (QLoRA:
# the base's projections as NF4 codes; its reference steps are PEFT's bf16 LoRA, bitsandbytes being
# absent there, and its PEFT load check quantizes the base as bitsandbytes would); "long" (summarizer) lengthens the sample's
# abstracts to max_seq_len words and puts them in the prompt (summarizer.full_context), so that
# the prompts fill max_seq_len as the reference steps' random tokens do. GPU_CHECK_RUNS (runs separated by ";") replaces
# the list (the Go test of the script runs one tiny tracker).
if [ -n "${GPU_CHECK_RUNS:-}" ]; then
	IFS=';' read -r -a runs <<<"$GPU_CHECK_RUNS"
elif [ "$CPU" = 1 ]; then
	# Three micro-batch sizes of the tracker: the plan's activation model against the peak RSS.
	runs=("tracker tiny 2 128 2" "tracker tiny 4 128 2" "tracker tiny 8 128 2" "summarizer tiny 2 256 2" "tracker tiny 2 128 2 auto nf4")
else
	# In order of value: the recipe's shapes in bf16 first (the summarizer's 16 x 2,048 on two 8B
	# layers with checkpointing, as the plan chooses), then without checkpointing, f32, and 1B.
	# The nf4 (QLoRA) runs of the 8B layers follow their bf16 runs of the same shapes (issue 32).
	runs=("tracker smollm2-135m 32 128 12 bf16" "summarizer llama-3.1-8b-2l 16 2048 6 bf16 ckpt long" "tracker llama-3.1-8b-2l 32 128 12 bf16"
		"tracker llama-3.1-8b-2l 32 128 12 bf16 nf4" "summarizer llama-3.1-8b-2l 16 2048 6 bf16 ckpt long nf4"
		"summarizer smollm2-135m 8 1024 12 bf16" "summarizer llama-3.1-8b-2l 16 2048 6 bf16" "tracker smollm2-135m 32 128 12 f32"
		"tracker llama-3.2-1b 32 128 12 bf16")
fi
for r in "${runs[@]}"; do
	read -r task shape batch seq steps precision opts <<<"$r"
	ckpt="" long="" nf4=""
	for o in ${opts:-}; do
		case $o in
		ckpt) ckpt=ckpt ;;
		long) long=long ;;
		nf4) nf4=nf4 ;;
		*) echo "gpu-check: run \"$r\": unknown option $o (want ckpt, long or nf4)" >&2 ;;
		esac
	done
	name="$task-$shape-b$batch${precision:+-$precision}${ckpt:+-$ckpt}${long:+-$long}${nf4:+-$nf4}"
	if [ "${#tok[@]}" = 0 ]; then
		# The byte-level test tokenizer spells the recipe's prompts in about four times Llama 3.1's
		# tokens: they do not fit the runs' max_seq_len, and four times longer runs are too slow here.
		printf '{"step":"status","name":"train %s","status":"skipped: the Llama 3.1 tokenizer is absent (tools/hftokenizer/fetch.sh)","seconds":0}\n' "$name" >>"$RES"
		render
		continue
	fi
	# (a) the random snapshot of the shape, when first needed. Written by the Go side (hf/randsnap) in
	# both modes: deterministic, whatever Python the machine has.
	if [ ! -d "$WORK/snap-$shape" ]; then
		step "snapshot $shape" 180 "$BIN" snapshot --out "$WORK/snap-$shape" --shape "$shape" "${tok[@]}" || continue
	fi
	settings=()
	sec=$(printf '%s' "$task" | tr '[:lower:]' '[:upper:]')
	[ -n "${precision:-}" ] && settings+=("TRACKSUM_${sec}_TRAIN_PRECISION=$precision")
	[ "${ckpt:-}" = ckpt ] && settings+=("TRACKSUM_${sec}_TRAIN_GRADIENT_CHECKPOINTING=true")
	# nf4: the base's projections quantized to NF4 at load (train.quantization), as the paper's QLoRA.
	[ "${nf4:-}" = nf4 ] && settings+=("TRACKSUM_${sec}_TRAIN_QUANTIZATION=nf4")
	longargs=()
	if [ "${long:-}" = long ]; then
		settings+=("TRACKSUM_${sec}_FULL_CONTEXT=true")
		longargs=(--doc-words "$seq")
	fi
	smi_start "train $name"
	step "train $name" 240 env "${settings[@]}" "$BIN" train --task "$task" --snapshot "$WORK/snap-$shape" --out "$WORK/$name" \
		--steps "$steps" --batch "$batch" --seq "$seq" --peak-tflops "$peak_tflops" "${longargs[@]}"
	rc=$?
	smi_stop
	[ $rc -eq 0 ] || continue
	ck="$WORK/$name/$task"
	step "logits $name" 120 env GOMLX_BACKEND="$EXACT" "$BIN" logits --checkpoint "$ck" --out "$WORK/$name/logits.safetensors"
	step "export $name" 120 "$BIN" export --checkpoint "$ck" --out "$WORK/$name/export"
	nf4args=()
	[ "${nf4:-}" = nf4 ] && nf4args=(--nf4)
	step "PEFT/transformers load $name" 180 "$PY" scripts/gpucheck/peft_check.py load --checkpoint "$ck" \
		--export "$WORK/$name/export" --ours "$WORK/$name/logits.safetensors" --task "$task" "${nf4args[@]}"
	ref_dtype=bfloat16
	[ "${precision:-}" = f32 ] && ref_dtype=float32
	ref_ckpt=()
	[ "${ckpt:-}" = ckpt ] && ref_ckpt=(--gradient-checkpointing)
	smi_start "PEFT reference steps $name"
	step "PEFT reference steps $name" 240 "$PY" scripts/gpucheck/peft_check.py train --checkpoint "$ck" \
		--task "$task" --batch "$batch" --seq "$seq" --steps "$steps" --dtype "$ref_dtype" "${ref_ckpt[@]}" \
		--batches "$WORK/$name/$task-batches.jsonl" --peak-tflops "$peak_tflops"
	smi_stop
	# Generation on the card (issue 33 item 5), once, with the first summarizer: tracksum-infer's
	# Track-then-Sum prompts of the prepared rows (their real lengths) at batch 1, 8 and 32, greedy
	# and beam 4, in float32 with TF32 off, against transformers' generate on the same prompts.
	if [ "$task" = summarizer ] && [ -z "${generated:-}" ]; then
		generated=1
		gen_data="$WORK/$name/prepared"
		[ "${long:-}" = long ] && gen_data="$WORK/$name/prepared-${seq}w"
		gen_args=()
		[ "$CPU" = 1 ] && gen_args=(--batches 1,2 --beams 1,2 --max-new 8)
		ref_gen_args=()
		[ "$CPU" = 1 ] && ref_gen_args=(--batch-sizes 1,2 --beams 1,2 --max-new 8)
		step "generate $name (f32, TF32 off)" 240 env GOMLX_BACKEND="$EXACT" "$BIN" generate --checkpoint "$ck" --data "$gen_data" \
			--prompts "$WORK/$name/prompts.jsonl" "${gen_args[@]}" &&
			step "transformers generate $name (f32, TF32 off)" 240 "$PY" scripts/gpucheck/peft_check.py generate --checkpoint "$ck" \
				--prompts "$WORK/$name/prompts.jsonl" --dtype float32 "${ref_gen_args[@]}"
	fi
done

# (f) the prepared shards with pyarrow (any run's prepared/ directory).
prepared=$(ls -d "$WORK"/*/prepared 2>/dev/null | head -1)
if [ -n "$prepared" ]; then
	step "pyarrow reads the shards" 60 "$PY" scripts/gpucheck/read_shards.py "$prepared"
fi

env_row total_seconds "$(($(date +%s) - start))"
render
echo "gpu-check: done in $(($(date +%s) - start))s: $OUT/gpu-check.md" >&2
# Exit 1 when a step failed or ran out of time (skipped steps are not failures).
if grep -q '"status":"\(failed\|timeout\)' "$RES"; then
	exit 1
fi
