package randsnap

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// TokenizerInfo is what a copied tokenizer decides in config.json.
type TokenizerInfo struct {
	Size int   // highest id + 1
	BOS  int   // -1: none
	EOS  []int // eos_token, plus Llama 3's other end tokens when present
}

// ReadTokenizerInfo reads, from a real checkpoint's tokenizer.json and tokenizer_config.json in
// dir, the ids a snapshot's config.json must agree with.
func ReadTokenizerInfo(dir string) (TokenizerInfo, error) {
	info := TokenizerInfo{BOS: -1}
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	path := filepath.Join(dir, snapshot.TokenizerFile)
	if err := atomicio.ReadJSONWith(path, &tj, atomicio.JSONOptions{MaxBytes: atomicio.MaxTokenizerJSONBytes}); err != nil {
		return info, err
	}
	ids := map[string]int{}
	// BPE and WordPiece vocabularies are {token: id}; Unigram's is [[token, score], ...] with ids in order.
	var byToken map[string]int
	var pieces [][2]any
	switch {
	case json.Unmarshal(tj.Model.Vocab, &byToken) == nil:
		ids = byToken
	case json.Unmarshal(tj.Model.Vocab, &pieces) == nil:
		for i, p := range pieces {
			if s, ok := p[0].(string); ok {
				ids[s] = i
			}
		}
	default:
		return info, fmt.Errorf("%s: model.vocab is neither a map nor a list", path)
	}
	for _, a := range tj.AddedTokens {
		ids[a.Content] = a.ID
	}
	for _, id := range ids {
		info.Size = max(info.Size, id+1)
	}
	if info.Size == 0 {
		return info, fmt.Errorf("%s: empty vocabulary", path)
	}
	var tc map[string]any
	cpath := filepath.Join(dir, snapshot.TokenizerConfigFile)
	if err := atomicio.ReadJSON(cpath, &tc, false); err != nil {
		return info, err
	}
	token := func(key string) (int, bool) {
		var s string
		switch v := tc[key].(type) {
		case string:
			s = v
		case map[string]any: // AddedToken object
			s, _ = v["content"].(string)
		}
		id, ok := ids[s]
		return id, ok && s != ""
	}
	if id, ok := token("bos_token"); ok {
		info.BOS = id
	}
	if id, ok := token("eos_token"); ok {
		info.EOS = append(info.EOS, id)
	}
	// Llama 3.1 Instruct's config.json lists three end tokens; keep them so the snapshot looks like it.
	for _, s := range []string{"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"} {
		if id, ok := ids[s]; ok && !slices.Contains(info.EOS, id) {
			info.EOS = append(info.EOS, id)
		}
	}
	return info, nil
}
