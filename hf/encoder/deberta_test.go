package encoder

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/encoder/layout"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/model"
)

// The golden outputs of tools/hfparity/deberta.py (a reference forward written from transformers'
// modeling_deberta_v2.py, float64 torch) over two tiny random DebertaV2ForSequenceClassification
// checkpoints: testdata/deberta_v2 (DeBERTa-v3's shape) and testdata/deberta_v2_legacy (the other
// branches: no buckets, pos_key_proj / pos_query_proj, absolute positions, token types,
// embed_proj).
type debertaGolden struct {
	IDs       [][]int32   `json:"ids"`
	Types     [][]int32   `json:"token_types"`
	Mask      [][]float32 `json:"mask"`
	Relative  [][]int     `json:"relative_positions"`
	Hidden    []float64   `json:"hidden"`
	Pooled    []float64   `json:"pooled"`
	Logits    []float64   `json:"logits"`
	V3Buckets *struct {
		Buckets      int   `json:"position_buckets"`
		MaxRelative  int   `json:"max_relative_positions"`
		From         int   `json:"from"`
		BucketValues []int `json:"buckets"`
	} `json:"v3_buckets"`
}

func readDebertaGolden(t *testing.T, dir string) debertaGolden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g debertaGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestDebertaParity: hidden states (every position, padding included), ContextPooler's output and
// the classifier's logits of a padded batch of sentence pairs against the reference, to 1e-4.
func TestDebertaParity(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want Config // the fields of the DeBERTa branch that the checkpoint sets
	}{
		{"testdata/deberta_v2", Config{Layout: layout.Layout{Disentangled: true, EmbeddingSize: 32, RelativeAttention: true, MaxRelativePositions: 16,
			PositionBuckets: 8, C2P: true, P2C: true, ShareAttKey: true, NormRelEmbed: true}, PoolerAct: "gelu"}},
		{"testdata/deberta_v2_legacy", Config{Layout: layout.Layout{Disentangled: true, EmbeddingSize: 24, PositionBiasedInput: true, RelativeAttention: true,
			MaxRelativePositions: 12, C2P: true, P2C: true, TypeVocab: 2, ConvKernel: 3}, PoolerAct: "gelu", ConvAct: "tanh"}},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			g := readDebertaGolden(t, tc.dir)
			s, err := snapshot.Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			store := gomlxmodel.NewStore()
			m, err := Load(context.Background(), s, store, LoRA{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config()
			got := Config{Layout: layout.Layout{Disentangled: c.Disentangled, EmbeddingSize: c.EmbeddingSize, PositionBiasedInput: c.PositionBiasedInput,
				RelativeAttention: c.RelativeAttention, MaxRelativePositions: c.MaxRelativePositions, PositionBuckets: c.PositionBuckets,
				C2P: c.C2P, P2C: c.P2C, ShareAttKey: c.ShareAttKey, NormRelEmbed: c.NormRelEmbed, TypeVocab: c.TypeVocab,
				ConvKernel: c.ConvKernel}, PoolerAct: c.PoolerAct, ConvAct: c.ConvAct}
			if got != tc.want || m.KeyPrefix() != "deberta." || !m.HasPooler() || m.SavedLabels() != 3 || c.LayerNormEps != 1e-7 {
				t.Fatalf("config %+v, prefix %q, pooler %v, labels %d, eps %g; want %+v, deberta., pooler, 3, 1e-7",
					got, m.KeyPrefix(), m.HasPooler(), m.SavedLabels(), c.LayerNormEps, tc.want)
			}
			rel := c.relativePosition(len(g.IDs[0]))
			if !slices.EqualFunc(rel, g.Relative, slices.Equal) {
				t.Errorf("relative positions\n got %v\nwant %v", rel, g.Relative)
			}
			if err := m.AddClassifier(3, 0); err != nil {
				t.Fatal(err)
			}
			b, _, err := model.Backend()
			if err != nil {
				t.Fatal(err)
			}
			exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, ids, types, mask *Node) []*Node {
				hidden := m.Hidden(scope, ids, types, mask)
				pooled := m.Pooled(scope, hidden)
				return []*Node{hidden, pooled, m.Classify(scope, pooled)}
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := exec.Exec(flat2(g.IDs), flat2(g.Types), flat2(g.Mask))
			if err != nil {
				t.Fatal(err)
			}
			compare(t, "deberta hidden", tensors.MustCopyFlatData[float32](res[0]), g.Hidden)
			compare(t, "deberta pooled", tensors.MustCopyFlatData[float32](res[1]), g.Pooled)
			compare(t, "deberta logits", tensors.MustCopyFlatData[float32](res[2]), g.Logits)
			// The same pairs right-padded (masked) to lengths whose relative scores take several
			// blocks (relativeBlock): the pooled output and the logits must not move.
			for _, seq := range []int{40, 64, 96} {
				if c.PositionBiasedInput && seq > c.MaxPositions {
					continue
				}
				pad := func(rows [][]int32) *tensors.Tensor {
					out := make([][]int32, len(rows))
					for i, r := range rows {
						out[i] = append(slices.Clone(r), make([]int32, seq-len(r))...)
					}
					return flat2(out)
				}
				mask := make([][]float32, len(g.Mask))
				for i, r := range g.Mask {
					mask[i] = append(slices.Clone(r), make([]float32, seq-len(r))...)
				}
				res, err := exec.Exec(pad(g.IDs), pad(g.Types), flat2(mask))
				if err != nil {
					t.Fatal(err)
				}
				compare(t, fmt.Sprintf("deberta pooled, %d tokens", seq), tensors.MustCopyFlatData[float32](res[1]), g.Pooled)
				compare(t, fmt.Sprintf("deberta logits, %d tokens", seq), tensors.MustCopyFlatData[float32](res[2]), g.Logits)
			}
		})
	}
}

// TestLogBucketPositionMatchesTorch: the buckets of a real DeBERTa-v3 configuration
// (position_buckets 256, max_relative_positions 512) for every distance of a 512-token input, as
// torch's float32 make_log_bucket_position gives them.
func TestLogBucketPositionMatchesTorch(t *testing.T) {
	g := readDebertaGolden(t, "testdata/deberta_v2")
	v := g.V3Buckets
	if v == nil || len(v.BucketValues) != 1023 {
		t.Fatal("golden.json has no v3_buckets")
	}
	for i, want := range v.BucketValues {
		d := v.From + i
		if got := LogBucketPosition(d, v.Buckets, v.MaxRelative); got != want {
			t.Errorf("LogBucketPosition(%d, %d, %d) = %d, want %d", d, v.Buckets, v.MaxRelative, got, want)
		}
	}
}

// TestDebertaConfigErrors: what the DeBERTa branch refuses, each a one-line error naming
// config.json.
func TestDebertaConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		patch map[string]any
		want  string
	}{
		{"even conv kernel", map[string]any{"conv_kernel_size": 2}, "conv_kernel_size = 2"},
		{"grouped conv", map[string]any{"conv_kernel_size": 3, "conv_groups": 2}, "conv_groups = 2"},
		{"pooler of another width", map[string]any{"pooler_hidden_size": 16}, "pooler_hidden_size = 16"},
		{"pos_att_type of numbers", map[string]any{"pos_att_type": []any{1, 2}}, "pos_att_type"},
		{"buckets past the positions", map[string]any{"position_buckets": 64}, "position_buckets = 64"},
		{"head size", map[string]any{"attention_head_size": 4}, "attention_head_size = 4"},
		{"pooler activation", map[string]any{"pooler_hidden_act": "mish"}, "pooler_hidden_act"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := copyDir(t, "testdata/deberta_v2")
			path := filepath.Join(dir, snapshot.ConfigFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(data, &cfg); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.patch {
				cfg[k] = v
			}
			data, _ = json.Marshal(cfg)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ConfigOf(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "config.json") || strings.Contains(err.Error(), "\n") {
				t.Errorf("ConfigOf: %v, want a one-line error naming config.json with %q", err, tc.want)
			}
		})
	}
	s, err := snapshot.Open("testdata/deberta_v2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), s, gomlxmodel.NewStore(), LoRA{Rank: 4, Alpha: 4}, 0); err == nil || !strings.Contains(err.Error(), "LoRA") {
		t.Errorf("LoRA on deberta-v2: %v, want a refusal", err)
	}
}

// copyDir copies the files of a test snapshot into a temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestDebertaTokensMatchTokenizersJS: a SentencePiece-style Unigram tokenizer.json as DeBERTa-v3
// ships (Strip and " {2,}" normalizers, Metaspace with prepend_scheme "always", Unigram scores and
// unk_id, TemplateProcessing [CLS] $A [SEP] $B [SEP] with type ids 0/1) against
// @huggingface/tokenizers' ids (tools/hfparity/deberta_tokens.mjs), and Pair's ids and types.
func TestDebertaTokensMatchTokenizersJS(t *testing.T) {
	dir := "testdata/deberta_v2"
	data, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Singles []struct {
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			IDsSpecial []int  `json:"ids_special"`
		} `json:"singles"`
		Pairs []struct {
			A, B  string
			IDs   []int32 `json:"ids"`
			Types []int32 `json:"types"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Singles {
		if got := tok.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q, false)\n got: %v\nwant: %v", c.Text, got, c.IDs)
		}
		if got := tok.Encode(c.Text, true); !slices.Equal(got, c.IDsSpecial) {
			t.Errorf("Encode(%q, true)\n got: %v\nwant: %v", c.Text, got, c.IDsSpecial)
		}
	}
	sp, err := PairTokensOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	if sp != (PairTokens{CLS: 1, SEP: 2}) {
		t.Fatalf("pair tokens %+v, want [CLS]=1 [SEP]=2", sp)
	}
	for _, c := range golden.Pairs {
		ids, types := Pair(tok, sp, c.A, c.B, 512)
		if !slices.Equal(ids, c.IDs) || !slices.Equal(types, c.Types) {
			t.Errorf("Pair(%q, %q)\n got: %v %v\nwant: %v %v", c.A, c.B, ids, types, c.IDs, c.Types)
		}
	}
}

// TestRelativeScores: relativeRows and relativeScores give disentangled_attention_bias' c2p
// scores x_i · pos[clamp(rel[i][j] + span)] and p2c scores (before the transpose)
// x_k · pos[clamp(-rel[k][q] + span)], as torch's gather over relativePosition's table reads
// them, for lengths from 1 to past the span and the buckets, bucketed or not.
func TestRelativeScores(t *testing.T) {
	b, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	const batch, heads, width = 2, 3, 4
	for _, tc := range []struct {
		name string
		cfg  Config
		seqs []int
	}{
		{"buckets", Config{Layout: layout.Layout{PositionBuckets: 8, MaxRelativePositions: 16}}, []int{1, 2, 3, 5, 8, 17, 37, 40, 64, 96}},
		{"plain", Config{Layout: layout.Layout{MaxRelativePositions: 6}}, []int{1, 4, 6, 7, 15}},
	} {
		span := tc.cfg.AttentionSpan()
		// pos[r, h, e]: the projected relative embeddings, one row per clamped relative position.
		pos := make([]float32, 2*span*heads*width)
		for i := range pos {
			pos[i] = float32((i*37)%23)/23 - 0.5
		}
		for _, seq := range tc.seqs {
			t.Run(fmt.Sprintf("%s/%d", tc.name, seq), func(t *testing.T) {
				x := make([]float32, batch*heads*seq*width)
				for i := range x {
					x[i] = float32((i*53)%29)/29 - 0.5
				}
				tb := relativeBlock(seq, width)
				n, w := seq/tb, tb+seq-1
				c2pRows, p2cRows := tc.cfg.relativeRows(seq, tb)
				rel := tc.cfg.relativePosition(seq)
				clamp := func(v int) int { return min(max(v+span, 0), 2*span-1) }
				for _, term := range []struct {
					name  string
					rows  []int32
					index func(a, b int) int // torch's gathered column at [a][b]
				}{
					{"c2p", c2pRows, func(a, b int) int { return clamp(rel[a][b]) }},
					{"p2c", p2cRows, func(a, b int) int { return clamp(-rel[a][b]) }},
				} {
					// posT [B, H·n, e, W]: pos's rows of each block, transposed.
					posT := make([]float32, batch*heads*n*width*w)
					for bh := range batch * heads {
						h := bh % heads
						for blk := range n {
							for e := range width {
								for m := range w {
									r := term.rows[blk*w+m]
									posT[(((bh*n+blk)*width)+e)*w+m] = pos[(int(r)*heads+h)*width+e]
								}
							}
						}
					}
					exec, err := NewExec(b, func(x, posT *Node) *Node { return relativeScores(x, posT, tb) })
					if err != nil {
						t.Fatal(err)
					}
					out, err := exec.Exec(tensors.FromFlatDataAndDimensions(x, batch, heads, seq, width),
						tensors.FromFlatDataAndDimensions(posT, batch, heads*n, width, w))
					if err != nil {
						t.Fatal(err)
					}
					got := tensors.MustCopyFlatData[float32](out[0])
					for bh := range batch * heads {
						h := bh % heads
						for i := range seq {
							for j := range seq {
								var want float32
								r := term.index(i, j)
								for e := range width {
									want += x[(bh*seq+i)*width+e] * pos[(r*heads+h)*width+e]
								}
								if g := got[(bh*seq+i)*seq+j]; math.Abs(float64(g-want)) > 1e-5 {
									t.Fatalf("%s [%d, %d, %d]: %g, want %g (row %d)", term.name, bh, i, j, g, want, r)
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestRelativeBlock: relativeScores' blocks divide the length, have up to 32 rows or a head's
// width, and fall back to one block where no divisor of 8 or more is there.
func TestRelativeBlock(t *testing.T) {
	for _, tc := range []struct{ seq, headDim, want int }{
		{1, 16, 1}, {24, 16, 24}, {32, 16, 32}, {40, 16, 20}, {96, 16, 32}, {448, 16, 32},
		{448, 64, 64}, {512, 64, 64}, {1000, 16, 25}, {37, 16, 37}, {449, 16, 449}, {98, 16, 14},
	} {
		if got := relativeBlock(tc.seq, tc.headDim); got != tc.want {
			t.Errorf("relativeBlock(%d, %d) = %d, want %d", tc.seq, tc.headDim, got, tc.want)
		}
	}
}
