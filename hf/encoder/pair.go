package encoder

import (
	"fmt"

	"github.com/tracksum/tracksum/hf/tokenizer"
)

// PairTokens are the special tokens of a sentence-pair template, read from a tokenizer.
type PairTokens struct {
	CLS, SEP int
	// DoubleSEP is RoBERTa's template (RobertaProcessing): <s> A </s></s> B </s>, with one token
	// type; BERT's is [CLS] A [SEP] B [SEP] with types 0 then 1.
	DoubleSEP bool
}

// Overhead is the number of special tokens the pair template adds: 3 (BERT) or 4 (RoBERTa).
func (sp PairTokens) Overhead() int {
	if sp.DoubleSEP {
		return 4
	}
	return 3
}

// PairTokensOf returns the [CLS] and [SEP] ids (<s> and </s> for RoBERTa) of a tokenizer: the
// ids its post-processor puts around an empty text; any other template is an error naming the
// directory.
func PairTokensOf(tok *tokenizer.Tokenizer) (PairTokens, error) {
	ids := tok.Encode("", true)
	if len(ids) != 2 {
		return PairTokens{}, fmt.Errorf("tokenizer %s: template gives %v around an empty text, want BERT's [CLS] [SEP] or RoBERTa's <s> </s>", tok.Dir, ids)
	}
	return PairTokens{CLS: ids[0], SEP: ids[1], DoubleSEP: tok.PostProcessor == "RobertaProcessing"}, nil
}

// Pair is transformers' tokenizer(a, b, truncation=True, max_length=maxLen) for a BERT fast
// tokenizer: [CLS] a [SEP] b [SEP] with token type ids 0 for [CLS] a [SEP] and 1 for b [SEP]; for
// a RoBERTa one (sp.DoubleSEP), <s> a </s></s> b </s> with token types all 0 (RoBERTa's
// tokenizers return none, and its type_vocab_size is 1). When the parts exceed maxLen, a and b
// are truncated at their ends with the tokenizers crate's "longest_first" rule
// (utils/truncation.rs), for a budget L = maxLen - sp.Overhead() and lengths n1 <= n2: the
// shorter keeps its length and the longer gets L - n1; when n1 > L/2 too, the shorter gets L/2
// and the longer L/2 + L%2. maxLen must be at least sp.Overhead().
func Pair(tok *tokenizer.Tokenizer, sp PairTokens, a, b string, maxLen int) (ids, types []int32) {
	ta, tb := tok.Encode(a, false), tok.Encode(b, false)
	na, nb := TruncatePair(len(ta), len(tb), maxLen-sp.Overhead())
	ids = make([]int32, 0, na+nb+sp.Overhead())
	ids = append(ids, int32(sp.CLS))
	for _, id := range ta[:na] {
		ids = append(ids, int32(id))
	}
	ids = append(ids, int32(sp.SEP))
	if sp.DoubleSEP {
		ids = append(ids, int32(sp.SEP))
	}
	first := len(ids)
	for _, id := range tb[:nb] {
		ids = append(ids, int32(id))
	}
	ids = append(ids, int32(sp.SEP))
	types = make([]int32, len(ids))
	if sp.DoubleSEP {
		return ids, types
	}
	for i := first; i < len(ids); i++ {
		types[i] = 1
	}
	return ids, types
}

// TruncatePair returns the lengths n1, n2 that "longest_first" keeps of two sequences of lengths
// n1, n2 within a budget of budget tokens (see Pair).
func TruncatePair(n1, n2, budget int) (int, int) {
	if budget < 0 {
		budget = 0
	}
	if n1+n2 <= budget {
		return n1, n2
	}
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > budget {
		n2 = n1
	} else {
		n2 = max(n1, budget-n1)
	}
	if n1+n2 > budget {
		n1 = budget / 2
		n2 = n1 + budget%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	return n1, n2
}
