# tracksum: Track-then-Sum for traceable aspect-based summarization of medical abstracts.
# `make demo` runs the whole pipeline on the built-in synthetic sample; `make test` runs the tests.

GO      ?= go
# The pure-Go GoMLX backend's AVX2 matmul kernels need Go 1.26's SIMD experiment (15-25x faster
# matmuls). Override with GOEXPERIMENT= for a plain build.
GOEXPERIMENT ?= simd
export GOEXPERIMENT
BIN     := bin
CMDS    := prepare train infer eval
# Binaries are prefixed: a binary named `eval` would be shadowed by the shell builtin.
BINS    := $(addprefix $(BIN)/tracksum-,$(CMDS))

.PHONY: all build test vet fmt-check demo bench clean

# DATA=path/to/tracsum.jsonl runs the demo on real data with the default config; CONFIG=... picks a profile.
DATA   ?=
CONFIG ?=
OUT    ?= runs/demo

all: build

build: $(BINS)

$(BIN)/tracksum-%: FORCE
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./cmd/$*

FORCE:

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The tests, then the whole demo pipeline with the tiny profile (about a minute on 2 cores).
test: fmt-check vet
	$(GO) test -count=1 ./...
	$(MAKE) demo CONFIG=configs/tiny.yaml OUT=runs/demo-tiny

demo: build
	DATA="$(DATA)" CONFIG="$(or $(CONFIG),configs/default.yaml)" OUT="$(OUT)" ./scripts/demo.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf $(BIN)
