package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/infer"
	"github.com/tracksum/tracksum/model/pretrained"
)

// Chat serves a causal LM as itself (--mode chat): a request's messages are rendered with the
// model's chat template and answered with its KV-cache generation (model/pretrained's
// ChatModel), greedy unless the request asks for a temperature > 0. Answers are generated one at
// a time (ChatModel serializes them).
type Chat struct {
	// Model is the loaded causal LM.
	Model *pretrained.ChatModel
	// MaxTokens caps the answer of a request that sets no max_tokens (the model's context bounds
	// every answer).
	MaxTokens int
}

// Mode implements describedBackend.
func (c *Chat) Mode() string { return ModeChat }

// Concurrency implements describedBackend: ChatModel generates one answer at a time.
func (c *Chat) Concurrency() int { return 1 }

// DefaultChatMaxTokens is the answer cap of a chat request without max_tokens (--max-tokens).
const DefaultChatMaxTokens = 512

// LoadChat loads dir, a fine-tuned pretrained checkpoint or a Hugging Face snapshot, through
// infer.LoadChatModel (cfg's infer.precision), with the answer cap maxTokens (0:
// DefaultChatMaxTokens).
func LoadChat(ctx context.Context, cfg *config.Config, dir string, maxTokens int) (*Chat, error) {
	m, err := infer.LoadChatModel(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	if maxTokens <= 0 {
		maxTokens = DefaultChatMaxTokens
	}
	return &Chat{Model: m, MaxTokens: maxTokens}, nil
}

// Complete implements Backend: the conversation through the chat template, the answer up to the
// model's end-of-turn token, max_tokens (else MaxTokens) or the context. temperature > 0 samples
// (top_p, seed; seed 0 when absent, so that a request is answered the same each time); absent
// or 0 is greedy. Stop strings cut the generated answer, whose tokens are then counted up to the
// cut. A developer message is read as a system message (OpenAI's newer name for it).
func (c *Chat) Complete(_ context.Context, messages []Message, p Params) (Completion, error) {
	msgs := make([]chattemplate.Message, len(messages))
	for i, m := range messages {
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msgs[i] = chattemplate.Message{Role: role, Content: m.Content}
	}
	o := pretrained.ChatOptions{MaxNewTokens: c.MaxTokens}
	if p.MaxTokens > 0 {
		o.MaxNewTokens = p.MaxTokens
	}
	if p.Temperature != nil && *p.Temperature > 0 {
		o.Temperature = *p.Temperature
		if p.TopP != nil {
			o.TopP = *p.TopP
		}
		if p.Seed != nil {
			o.Seed = *p.Seed
		}
	}
	a, err := c.Model.Complete(msgs, o)
	if err != nil {
		if errors.Is(err, pretrained.ErrPromptTooLong) || errors.Is(err, pretrained.ErrConversation) {
			// The template's errors name its file by the server's path: the client gets the
			// file's name, the log the path.
			msg := err.Error()
			if path := c.Model.Chat.Tpl.Path; path != "" {
				msg = strings.ReplaceAll(msg, path, filepath.Base(path))
			}
			return Completion{}, errBadRequestLogged(msg, err.Error())
		}
		return Completion{}, fmt.Errorf("generating: %w", err)
	}
	out := Completion{Content: a.Text, PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens, Truncated: a.Truncated}
	if cut, ok := applyStop(out.Content, p.Stop); ok {
		out.Content, out.CompletionTokens, out.Truncated = cut, c.Model.CountTokens(cut), false
	}
	return out, nil
}
