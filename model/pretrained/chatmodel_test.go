package pretrained

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/randsnap"
)

// TestChatMarkerStopsAnswer is issue 35 item 10: an end marker found in the decoded text (spelt in
// ordinary tokens) cut the answer, but completion_tokens still counted every generated token and
// generation ran on to the cap. A marker taken from the middle of a first answer must now end the
// second: its text stops before the marker and its count is that text's.
func TestChatMarkerStopsAnswer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llm")
	if err := randsnap.WriteDecoder(dir, randsnap.Decoder{ModelType: "llama", Vocab: 300, Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 24, Seed: 2, Std: 0.5}); err != nil {
		t.Fatal(err)
	}
	m, err := LoadChatSnapshot(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []chattemplate.Message{{Role: "user", Content: "Hello there."}}
	const maxNew = 24
	first, err := m.Complete(msgs, ChatOptions{MaxNewTokens: maxNew})
	if err != nil {
		t.Fatal(err)
	}
	if first.CompletionTokens < maxNew/2 || len(first.Text) < 8 {
		t.Fatalf("first answer %q (%d tokens): too short to take a marker from", first.Text, first.CompletionTokens)
	}
	marker := first.Text[len(first.Text)/2 : len(first.Text)/2+3]
	j := strings.Index(first.Text, marker)
	m.special = append(m.special, marker)
	got, err := m.Complete(msgs, ChatOptions{MaxNewTokens: maxNew})
	if err != nil {
		t.Fatal(err)
	}
	if want := first.Text[:j]; got.Text != want || got.Truncated {
		t.Errorf("answer %q (truncated %v), want %q cut at the marker %q", got.Text, got.Truncated, want, marker)
	}
	// Greedy: the same tokens as the first answer up to the marker; the count is those whose text
	// was returned.
	if got.CompletionTokens >= first.CompletionTokens || got.CompletionTokens < 1 {
		t.Errorf("completion tokens %d, want fewer than the first answer's %d (the returned text's)", got.CompletionTokens, first.CompletionTokens)
	}
}
