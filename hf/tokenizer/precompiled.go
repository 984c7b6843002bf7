package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/rivo/uniseg"
)

// precompiled is the Precompiled normalizer of SentencePiece conversions (tokenizers'
// normalizers/precompiled.rs over the spm_precompiled crate): the SentencePiece model's
// precompiled_charsmap, a darts-clone double-array trie from UTF-8 byte strings to offsets in a
// blob of NUL-terminated replacement strings (nmt_nfkc for DeBERTa-v3: NFKC, control characters
// removed, unusual spaces made " "). go-huggingface v0.4.2 ignores this normalizer.
type precompiled struct {
	trie       []uint32
	normalized []byte
}

// newPrecompiled parses a base64 precompiled_charsmap: a little-endian uint32 trie size in bytes,
// the trie's uint32 units, then the replacement strings.
func newPrecompiled(b64 string) (*precompiled, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap: %v", err)
	}
	if len(data) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap: %d bytes, too short", len(data))
	}
	size := int(binary.LittleEndian.Uint32(data))
	if size%4 != 0 || size > len(data)-4 || size == 0 {
		return nil, fmt.Errorf("precompiled_charsmap: trie size %d does not fit its %d bytes", size, len(data))
	}
	p := &precompiled{trie: make([]uint32, size/4), normalized: data[4+size:]}
	for i := range p.trie {
		p.trie[i] = binary.LittleEndian.Uint32(data[4+4*i:])
	}
	return p, nil
}

// The unit layout of darts-clone.
func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitValue(u uint32) int     { return int(u & (1<<31 - 1)) }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

// firstMatch is the value of the shortest key of the trie that prefixes s (spm_precompiled takes
// the first of common_prefix_search's results), ok false when none does. Positions outside the
// array end the search (a malformed charsmap maps nothing rather than panicking).
func (p *precompiled) firstMatch(s string) (int, bool) {
	if len(p.trie) == 0 {
		return 0, false
	}
	pos := unitOffset(p.trie[0])
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		if int(pos) >= len(p.trie) {
			return 0, false
		}
		u := p.trie[pos]
		if unitLabel(u) != uint32(c) {
			return 0, false
		}
		pos ^= unitOffset(u)
		if unitHasLeaf(u) {
			if int(pos) >= len(p.trie) {
				return 0, false
			}
			return unitValue(p.trie[pos]), true
		}
	}
	return 0, false
}

// transform is spm_precompiled's transform: the replacement string of chunk's first match.
func (p *precompiled) transform(chunk string) (string, bool) {
	at, ok := p.firstMatch(chunk)
	if !ok || at > len(p.normalized) {
		return "", false
	}
	end := at
	for end < len(p.normalized) && p.normalized[end] != 0 {
		end++
	}
	return string(p.normalized[at:end]), true
}

// normalize is spm_precompiled's normalize_string: each extended grapheme cluster shorter than 6
// bytes is replaced as a whole when the trie maps it, otherwise each of its characters is.
func (p *precompiled) normalize(s string) string {
	var b strings.Builder
	state := -1
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if r, ok := p.transform(g); ok {
				b.WriteString(r)
				continue
			}
		}
		for _, c := range g {
			if r, ok := p.transform(string(c)); ok {
				b.WriteString(r)
			} else {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}
