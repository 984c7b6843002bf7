package subword

import (
	"fmt"
	"slices"
	"testing"
)

// Benchmarks (figures in docs/tokenizer.md):
//
//	go test ./subword -run '^$' -bench . -benchtime 3x -cpu 2

// BenchmarkTrain learns an 8000-token vocabulary from a generated 20 MB corpus (Zipf-distributed
// pseudo-words mixed with synthetic clinical sentences).
func BenchmarkTrain(b *testing.B) {
	corpus := genZipfCorpus(1, 20<<20)
	size := 0
	for _, s := range corpus {
		size += len(s)
	}
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				v, err := Train(slices.Values(corpus), TrainOptions{Kind: kind, VocabSize: DefaultVocabSize})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(v.Size()), "tokens")
			}
		})
	}
}

// BenchmarkEncode measures sentences/s with as many goroutines as -cpu, for the native encoder
// and for sugarme/tokenizer, on synthetic sentences and (when available) the real dev abstracts.
func BenchmarkEncode(b *testing.B) {
	sets := map[string][]string{"synthetic": genCorpus(21, 20000)}
	if real, err := loadRealSentences(); err == nil {
		sets["real"] = real
	} else {
		b.Logf("real data not available, synthetic only: %v", err)
	}
	for _, set := range []string{"synthetic", "real"} {
		texts := sets[set]
		if texts == nil {
			continue
		}
		for _, kind := range kinds {
			tok := benchTokenizer(b, kind)
			for _, path := range []string{"native", "library"} {
				encode := tok.Encode
				if path == "library" {
					encode = tok.encodeReference
				}
				b.Run(fmt.Sprintf("%s/%s/%s", set, kind, path), func(b *testing.B) {
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							encode(texts[i%len(texts)])
							i += 7
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sentences/s")
				})
			}
		}
	}
}

var benchTok = map[string]*Tokenizer{}

func benchTokenizer(b *testing.B, kind string) *Tokenizer {
	if tok := benchTok[kind]; tok != nil {
		return tok
	}
	_, _, tok := trainLoad(b, genCorpus(1, 50000), TrainOptions{Kind: kind, VocabSize: DefaultVocabSize})
	benchTok[kind] = tok
	return tok
}
