package main

import (
	"os"

	"github.com/gomlx/compute/dtypes"
	"github.com/tracksum/tracksum/hf/randsnap"
)

func main() {
	d := randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Intermediate: 64, Seed: 7, DType: dtypes.BFloat16}
	if len(os.Args) > 2 {
		d.Vocab, d.TokenizerDir = 128256, os.Args[2]
		d.Extra = map[string]any{"bos_token_id": 128000, "eos_token_id": []int{128001, 128008, 128009}}
	}
	if err := randsnap.WriteDecoder(os.Args[1], d); err != nil {
		panic(err)
	}
}
