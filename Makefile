# tracksum: Track-then-Sum for traceable aspect-based summarization of medical abstracts.
# `make demo` runs the whole pipeline on the built-in synthetic sample; `make test` runs the tests.

GO      ?= go
# The pure-Go GoMLX backend's AVX2 matmul kernels need Go 1.26's SIMD experiment (15-25x faster
# matmuls). Override with GOEXPERIMENT= for a plain build.
GOEXPERIMENT ?= simd
export GOEXPERIMENT
BIN     := bin
CMDS    := prepare train infer eval serve export
# Binaries are prefixed: a binary named `eval` would be shadowed by the shell builtin.
BINS    := $(addprefix $(BIN)/tracksum-,$(CMDS))

.PHONY: all build test test-full vet fmt-check size-check demo pretrained-demo bench crashtest clean fuzz

# DATA=path/to/tracsum.jsonl runs the demo on real data with the default config; CONFIG=... picks a profile.
DATA   ?=
CONFIG ?=
OUT    ?= runs/demo

all: build

build: $(BINS)

$(BIN)/tracksum-%: FORCE
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $@ ./cmd/$*

FORCE:

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# No binary or generated output is committed: every tracked file stays under 5 MB (the largest
# today, a ROUGE golden, is under 0.5 MB).
size-check:
	@big=$$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 5*1024*1024 {print "  " $$2 " (" $$1 " bytes)"}'); \
	if [ -n "$$big" ]; then echo "tracked files over 5 MB (build outputs belong in .gitignore):"; echo "$$big"; exit 1; fi

# The fast suite, run before every commit (under 5 minutes on 2 cores, no package over 2): -short
# leaves the slow end-to-end tests (training to convergence, cross-validation runs, pretrained
# train -> infer runs, whole pipelines, the GPU check's CPU mode) to `make test-full`. Every go test
# here sets a -timeout with headroom for a busy machine (go test's own default is 10 minutes).
# TESTFLAGS adds go test flags (e.g. -json for per-test times, -v to stream the slow tests' stages).
TEST_TIMEOUT      ?= 6m
TEST_FULL_TIMEOUT ?= 40m
TESTFLAGS         ?=
test: fmt-check size-check vet
	$(GO) test -short -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./...

# What `make test` leaves out: the packages that hold slow tests (those that skip under -short),
# run whole, then the demo pipeline with the tiny profile (about a minute on 2 cores). CI runs it
# after `make test` (10-15 minutes on 2 cores).
SLOW_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' 'testing.Short()' .)))
test-full:
	$(GO) test -count=1 -timeout $(TEST_FULL_TIMEOUT) $(TESTFLAGS) $(SLOW_PKGS)
	$(MAKE) demo CONFIG=configs/tiny.yaml OUT=runs/demo-tiny

demo: build
	DATA="$(DATA)" CONFIG="$(or $(CONFIG),configs/default.yaml)" OUT="$(OUT)" ./scripts/demo.sh

# --pretrained end to end on a tiny random Llama snapshot (about 1-2 minutes on 2 cores; not part of
# `make test`): train (LoRA and full), infer, eval, export, and the independent adapter check.
pretrained-demo: build $(BIN)/randsnap
	OUT="$(or $(filter-out runs/demo,$(OUT)),runs/pretrained-demo)" ./scripts/pretrained-demo.sh

# A tool, not a tracksum command: writes random Hugging Face snapshots (tools/randsnap).
$(BIN)/randsnap: FORCE
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./tools/randsnap

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./...

# Crash-safety check, not part of `make test` (about 35 minutes on 2 cores): CRASHTEST_N random
# SIGKILLs during prepare, train (tracker and summarizer, tiny profile; a LoRA fine-tuning of a tiny
# random Llama snapshot), export and eval, and a SIGTERM while a pretrained base is loaded (exit 143
# within 3 s); see scripts/crashtest.
CRASHTEST_N ?= 10
crashtest: build
	CRASHTEST=1 CRASHTEST_N=$(CRASHTEST_N) $(GO) test -count=1 -v -timeout 2h ./scripts/crashtest

# Native Go fuzzing of every input parser, one target after the other, FUZZTIME each (not part of
# `make test` or CI). Seeds and past crashers live in each package's testdata/fuzz/FuzzXxx and run
# with every `go test`; a crash found here writes its input there: fix it and commit the file.
FUZZTIME ?= 60s
FUZZ_TARGETS := ./dataset:FuzzStreamInstances ./dataset:FuzzReadRaw ./dataset:FuzzSplitSentences \
	./dataset:FuzzReadShards ./internal/tensorio:FuzzReadTensors ./eval:FuzzRead ./eval/judge:FuzzParseClaims \
	./eval/judge:FuzzParseVerdict ./infer/llmmethods:FuzzParseAnswers ./subword:FuzzEncode ./subword:FuzzCleanLongWords \
	./model/ete:FuzzParse
# Hugging Face snapshots: safetensors headers, config.json of each family, chat templates (limits).
FUZZ_TARGETS += ./hf/snapshot:FuzzSnapshotHeader ./hf/snapshot:FuzzNF4QuantState ./hf/encoder:FuzzConfig ./hf/chattemplate:FuzzRender
# The server's request decoders (chat and text completions, unsupported fields).
FUZZ_TARGETS += ./serve:FuzzRequestDecoder
# The nli judge's disk cache entries.
FUZZ_TARGETS += ./eval/judge/nli:FuzzCacheEntry
# A checkpoint's manifest (its files and members) as Open reads it.
FUZZ_TARGETS += ./model/checkpoint:FuzzOpen
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -timeout 30m; \
	done

clean:
	rm -rf $(BIN)
