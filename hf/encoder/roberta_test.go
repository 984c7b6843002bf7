package encoder

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified, as in GoMLX
	"github.com/gomlx/gomlx/core/tensors"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/model"
)

// The golden outputs of tools/hfparity/roberta.py (a reference forward written from transformers'
// modeling_roberta.py, float64 torch) and tools/hfparity/roberta_tokens.mjs (@huggingface/tokenizers'
// ids), over testdata/roberta's random RobertaForSequenceClassification.
const robertaDir = "testdata/roberta"

// TestRobertaParity: hidden states and RobertaClassificationHead's logits of a padded batch (the
// longest row uses every position past the padding id) against the reference, to 1e-4.
func TestRobertaParity(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(robertaDir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		IDs    [][]int32   `json:"ids"`
		Mask   [][]float32 `json:"mask"`
		Hidden []float64   `json:"hidden"`
		Logits []float64   `json:"logits"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(robertaDir)
	if err != nil {
		t.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), s, store, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if m.KeyPrefix() != "roberta." || m.HasPooler() || c.PositionOffset != 2 || c.TypeVocab != 1 || m.SavedLabels() != 3 {
		t.Fatalf("prefix %q, pooler %v, position offset %d, type vocab %d, saved labels %d: want roberta., none, 2, 1, 3",
			m.KeyPrefix(), m.HasPooler(), c.PositionOffset, c.TypeVocab, m.SavedLabels())
	}
	if err := m.AddClassifier(3, 0); err != nil {
		t.Fatal(err)
	}
	b, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, ids, mask *Node) []*Node {
		hidden := m.Hidden(scope, ids, nil, mask)
		return []*Node{hidden, m.Classify(scope, m.Pooled(scope, hidden))}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(flat2(g.IDs), flat2(g.Mask))
	if err != nil {
		t.Fatal(err)
	}
	// Padded positions' hidden states are not compared: transformers computes them too, but no
	// consumer reads them and their values depend on the padding id's embedding only.
	hidden := tensors.MustCopyFlatData[float32](res[0])
	var got []float32
	var want []float64
	width := c.Hidden
	for r, row := range g.Mask {
		for p, keep := range row {
			if keep == 1 {
				off := (r*len(row) + p) * width
				got = append(got, hidden[off:off+width]...)
				want = append(want, g.Hidden[off:off+width]...)
			}
		}
	}
	compare(t, "roberta hidden (real tokens)", got, want)
	compare(t, "roberta logits", tensors.MustCopyFlatData[float32](res[1]), g.Logits)
}

// TestRobertaTokensMatchTokenizersJS: byte-level BPE with RoBERTa's pre-tokenizer (GPT-2's
// regex: contractions, digit and letter runs, whitespace runs) and RobertaProcessing's
// <s> A </s></s> B </s>, against @huggingface/tokenizers' ids.
func TestRobertaTokensMatchTokenizersJS(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(robertaDir, "tokens.json"))
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
			A, B string
			IDs  []int32 `json:"ids"`
		} `json:"pairs"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(robertaDir)
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
	if sp != (PairTokens{CLS: 0, SEP: 2, DoubleSEP: true}) {
		t.Fatalf("pair tokens %+v, want <s>=0 </s>=2 doubled", sp)
	}
	for _, c := range golden.Pairs {
		ids, types := Pair(tok, sp, c.A, c.B, 512)
		if !slices.Equal(ids, c.IDs) {
			t.Errorf("Pair(%q, %q)\n got: %v\nwant: %v", c.A, c.B, ids, c.IDs)
		}
		if slices.ContainsFunc(types, func(v int32) bool { return v != 0 }) {
			t.Errorf("Pair(%q, %q): token types %v, want all 0", c.A, c.B, types)
		}
	}
}

// TestBertNLIParity: a BertForSequenceClassification snapshot with its own three-label head
// (tools/hfparity/bert_nli.py): the saved classifier is taken and the logits of sentence pairs
// (token types 0 then 1, padding) match the reference to 1e-4.
func TestBertNLIParity(t *testing.T) {
	dir := "testdata/bert_nli"
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		IDs    [][]int32   `json:"ids"`
		Types  [][]int32   `json:"token_types"`
		Mask   [][]float32 `json:"mask"`
		Logits []float64   `json:"logits"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := gomlxmodel.NewStore()
	m, err := Load(context.Background(), s, store, LoRA{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.SavedLabels() != 3 || !m.HasPooler() || m.Config().PositionOffset != 0 {
		t.Fatalf("saved labels %d, pooler %v, position offset %d", m.SavedLabels(), m.HasPooler(), m.Config().PositionOffset)
	}
	if err := m.AddClassifier(3, 0); err != nil {
		t.Fatal(err)
	}
	b, _, err := model.Backend()
	if err != nil {
		t.Fatal(err)
	}
	exec, err := gomlxmodel.NewExec(b, store, func(scope *gomlxmodel.Scope, ids, types, mask *Node) *Node {
		return m.Classify(scope, m.Pooled(scope, m.Hidden(scope, ids, types, mask)))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(flat2(g.IDs), flat2(g.Types), flat2(g.Mask))
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "bert nli logits", tensors.MustCopyFlatData[float32](res[0]), g.Logits)
}
