package pretrained

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/family"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/model"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// ChatModel is a causal LM answering conversations as itself (tracksum-serve's chat mode): the
// messages rendered with its chat template, the answer generated with the KV cache (greedy, or
// temperature/top-p sampling). It is a base snapshot, or a fine-tuned checkpoint's base with the
// adapters (or weights) it trained; a tracker's lm_cls head is loaded but unused. Generation is
// serialized: it is safe for concurrent use, one answer at a time.
type ChatModel struct {
	// Chat renders and tokenizes conversations (the checkpoint's copies of the tokenizer and
	// template, or the snapshot's).
	Chat *Chat
	// Meta is the checkpoint's metadata; nil for a base snapshot.
	Meta *Meta
	// ModelType is the base's config.json model_type.
	ModelType string
	// Context is the model's context in tokens (max_position_embeddings): a prompt and its
	// answer fit in it.
	Context int
	mu      sync.Mutex
	gen     *generator
	// special are the strings cut from a generated answer (end-of-turn markers).
	special []string
}

// ErrConversation marks a conversation the chat template refuses (e.g. roles out of the order it
// accepts, or none of its roles).
var ErrConversation = errors.New("the chat template refused the conversation")

// ErrPromptTooLong marks a conversation whose prompt leaves no room for an answer in the model's
// context.
var ErrPromptTooLong = errors.New("the prompt does not fit in the model's context")

// ChatOptions are one answer's generation settings.
type ChatOptions struct {
	// MaxNewTokens caps the answer's tokens, the end token included (at most what the context
	// leaves after the prompt).
	MaxNewTokens int
	// Temperature > 0 samples each token from the distribution sharpened by 1/Temperature, cut
	// to its top-p nucleus (TopP in (0, 1]; 0 means 1), from the stream of Seed; 0 is greedy.
	Temperature, TopP float64
	Seed              int64
}

// ChatAnswer is a generated answer.
type ChatAnswer struct {
	// Text is the answer, up to its end-of-turn marker.
	Text string
	// PromptTokens counts the rendered prompt, CompletionTokens the generated tokens (the end
	// token excluded).
	PromptTokens, CompletionTokens int
	// Truncated is set when the answer stopped at MaxNewTokens or the context, not at an end
	// token.
	Truncated bool
}

// LoadChatCheckpoint loads a fine-tuned pretrained checkpoint (any task, head or variant of a
// causal LM) as a chat model: its base, with its trained variables, and its chat.
func LoadChatCheckpoint(ctx context.Context, dir string, opts ...LoadOptions) (*ChatModel, error) {
	return loadChatCheckpoint(ctx, checkpoint.DirFiles(dir), dir, opts...)
}

// loadChatCheckpoint is LoadChatCheckpoint of dir, its metadata read through r (an opened
// manifest's verified bytes, or checkpoint.DirFiles).
func loadChatCheckpoint(ctx context.Context, r checkpoint.Reader, dir string, opts ...LoadOptions) (*ChatModel, error) {
	meta, err := readMeta(r, dir)
	if err != nil {
		return nil, err
	}
	if meta.Head == config.HeadEncoderCLS {
		return nil, fmt.Errorf("%w: %s is an encoder (%s) tracker: it classifies, it cannot write an answer", ErrCheckpoint, dir, meta.ModelType)
	}
	l, err := openMeta(ctx, r, dir, meta, precisionOf(opts))
	if err != nil {
		return nil, err
	}
	lm, err := loadCausalLM(ctx, l.backend, l.snap, l.meta.LoRA, l.meta.Seed, l.meta.Head == config.HeadLMCLS,
		computeSettings{bf16: l.meta.Precision == config.PrecisionBF16, quantization: l.meta.Quantization})
	if err != nil {
		return nil, err
	}
	if err := restore(dir, lm); err != nil {
		return nil, err
	}
	return newChatModel(lm, l.chat, l.meta)
}

// LoadChatSnapshot loads a Hugging Face snapshot of a causal LM (config.json, weights, tokenizer
// files with a chat template) as a chat model. precision is f32, bf16 or auto (bf16 on CUDA);
// empty is f32.
func LoadChatSnapshot(ctx context.Context, dir, precision string) (*ChatModel, error) {
	snap, err := snapshot.Open(dir)
	if err != nil {
		return nil, err
	}
	if fam, ok := family.Lookup(snap.ModelType); !ok || fam.Kind != family.CausalLM {
		return nil, fmt.Errorf("%s: model_type %q is not a causal LM (one of %s): it cannot write an answer", dir, snap.ModelType,
			strings.Join(family.Names(family.CausalLM), ", "))
	}
	backend, bname, err := model.Backend()
	if err != nil {
		return nil, err
	}
	dc, err := decoder.ConfigOf(snap)
	if err != nil {
		return nil, err
	}
	chat, err := LoadChat(dir, dc.EOSList, dc.Vocab)
	if err != nil {
		return nil, err
	}
	bf16 := precision != "" && config.ResolvePrecision(precision, bname) == config.PrecisionBF16
	lm, err := loadCausalLM(ctx, backend, snap, config.LoRA{}, 0, false, computeSettings{bf16: bf16})
	if err != nil {
		return nil, err
	}
	return newChatModel(lm, chat, nil)
}

func newChatModel(lm *causalLM, chat *Chat, meta *Meta) (*ChatModel, error) {
	g, err := newGenerator(lm, chat.Stop)
	if err != nil {
		return nil, err
	}
	m := &ChatModel{Chat: chat, Meta: meta, ModelType: lm.snap.ModelType, Context: lm.dec.Config().MaxPositions, gen: g}
	if end, err := chat.turnEnd(); err == nil && strings.TrimSpace(end) != "" {
		m.special = append(m.special, strings.TrimSpace(end))
	}
	for _, id := range chat.Stop {
		m.special = append(m.special, chat.Tok.Decode([]int{int(id)}))
	}
	return m, nil
}

// Complete answers the conversation msgs (rendered with the generation prompt). A prompt that
// leaves no room for an answer is an ErrPromptTooLong error, a conversation the template refuses
// an ErrConversation error.
func (m *ChatModel) Complete(msgs []chattemplate.Message, o ChatOptions) (ChatAnswer, error) {
	prompt, err := m.Chat.Prompt(msgs)
	if err != nil {
		return ChatAnswer{}, fmt.Errorf("%w: %w", ErrConversation, err)
	}
	a := ChatAnswer{PromptTokens: len(prompt)}
	if len(prompt) == 0 {
		return a, fmt.Errorf("%w: the conversation renders to no token", ErrPromptTooLong)
	}
	if len(prompt) >= m.Context {
		return a, fmt.Errorf("%w: %d prompt tokens, the context holds %d", ErrPromptTooLong, len(prompt), m.Context)
	}
	maxNew := min(max(o.MaxNewTokens, 1), m.Context-len(prompt))
	m.mu.Lock()
	ids, err := m.gen.Generate([][]int32{prompt}, GenOptions{BeamSize: 1, MaxNewTokens: maxNew,
		Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed, Done: m.markerDone})
	m.mu.Unlock()
	if err != nil {
		return a, err
	}
	out := ids[0]
	// Generate drops the end token: an answer as long as its cap did not end on its own.
	a.Truncated = len(out) >= maxNew
	text := m.Chat.Tok.Decode(int32sToInts(out))
	a.Text, a.CompletionTokens = text, len(out)
	if j := m.markerIndex(text); j >= 0 {
		// Generation stopped at the marker's last token; the answer and its count end before it:
		// the generated tokens whose text lies before the marker.
		a.Text, a.Truncated = text[:j], false
		for a.CompletionTokens > 0 && len(m.Chat.Tok.Decode(int32sToInts(out[:a.CompletionTokens]))) > j {
			a.CompletionTokens--
		}
	}
	return a, nil
}

// markerTail is how many of the last generated tokens markerDone decodes: more than any end
// marker spells (a byte-level tokenizer spells "<|im_end|>" in 10).
const markerTail = 64

// markerDone reports whether the answer tokens end in one of the model's end markers spelt in
// ordinary tokens (a template's end-of-turn text, a stop token's text), so that generation stops
// there rather than running on to the token cap.
func (m *ChatModel) markerDone(_ int, tokens []int32) bool {
	return m.markerIndex(m.Chat.Tok.Decode(int32sToInts(tokens[max(0, len(tokens)-markerTail):]))) >= 0
}

// markerIndex is the byte offset of the first end marker in text, or -1.
func (m *ChatModel) markerIndex(text string) int {
	first := -1
	for _, end := range m.special {
		if j := strings.Index(text, end); end != "" && j >= 0 && (first < 0 || j < first) {
			first = j
		}
	}
	return first
}

// CountTokens returns the number of tokens of text in the model's tokenizer.
func (m *ChatModel) CountTokens(text string) int { return len(m.Chat.Tok.Encode(text, false)) }
