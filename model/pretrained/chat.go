package pretrained

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/hf/chattemplate"
	"github.com/tracksum/tracksum/hf/decoder"
	"github.com/tracksum/tracksum/hf/snapshot"
	"github.com/tracksum/tracksum/hf/tokenizer"
	"github.com/tracksum/tracksum/internal/atomicio"
	"github.com/tracksum/tracksum/model/checkpoint"
)

// Chat turns conversations into token ids the way the checkpoint was trained to read them: the
// chat template of its tokenizer_config.json (hf/chattemplate, rendered as transformers'
// apply_chat_template) and its tokenizer (hf/tokenizer). It is safe for concurrent use.
type Chat struct {
	Tok *tokenizer.Tokenizer
	Tpl *chattemplate.Template
	// Stop are the ids that end a generated answer: the template's eos_token and the end-of-turn
	// tokens it writes after an assistant turn (e.g. Llama 3's <|eot_id|>), plus those given to
	// LoadChat (config.json's eos_token_id list).
	Stop []int32
	// Pad is the id written in padding positions (masked out; any valid id works).
	Pad int32
	// cut counts the prompts whose text was cut to fit max_seq_len (fit), for the statistics
	// printed at the start of training.
	cut atomic.Int64
}

// cutCount returns how many prompts built with c had their text cut to fit max_seq_len; 0 for
// no chat (an encoder's pairs are truncated by hf/encoder, not counted).
func (c *Chat) cutCount() int64 {
	if c == nil {
		return 0
	}
	return c.cut.Load()
}

// tokenizers caches loaded tokenizers by the SHA-256 of their two files: building Llama 3's
// (a 9 MB tokenizer.json) takes seconds, and one process loads the same one several times (the
// base's and the checkpoint's copy at training; tracker and summarizer at inference).
var tokenizers struct {
	sync.Mutex
	byDigest map[string]*tokenizer.Tokenizer
}

// loadTokenizer is tokenizer.LoadFrom through the cache, the files of dir read through files. A
// Tokenizer is immutable once loaded, so one value serves every directory holding the same files
// (its Dir is the first one's).
func loadTokenizer(files checkpoint.Reader, dir string) (*tokenizer.Tokenizer, error) {
	h := sha256.New()
	for _, name := range []string{snapshot.TokenizerFile, snapshot.TokenizerConfigFile} {
		b, err := files.ReadFile(name)
		if err != nil {
			return tokenizer.LoadFrom(files, dir) // its error names the file
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	key := hex.EncodeToString(h.Sum(nil))
	tokenizers.Lock()
	defer tokenizers.Unlock()
	if tok, ok := tokenizers.byDigest[key]; ok {
		return tok, nil
	}
	tok, err := tokenizer.LoadFrom(files, dir)
	if err != nil {
		return nil, err
	}
	if tokenizers.byDigest == nil {
		tokenizers.byDigest = map[string]*tokenizer.Tokenizer{}
	}
	tokenizers.byDigest[key] = tok
	return tok, nil
}

// LoadChat reads the tokenizer and chat template of dir (a snapshot or a checkpoint holding
// copies of tokenizer.json and tokenizer_config.json). eos are extra end-of-answer ids. vocab is
// the model's embedding rows (config.json's vocab_size): every id the tokenizer or eos can give
// must have a row, checked here once rather than failing as an index out of range in a graph
// (vocab 0 skips the check: prompt tests without a model).
func LoadChat(dir string, eos []int, vocab int) (*Chat, error) {
	return loadChat(dir, "", eos, vocab)
}

// chatTemplateSource resolves value, the setting of key (TASK.chat_template): "" for the
// snapshot's own template, else the Jinja source of the named template or of the file.
func chatTemplateSource(key, value string) (string, error) {
	if value == config.ChatTemplateSnapshot {
		return "", nil
	}
	if s, ok := chattemplate.NamedSource(value); ok {
		return s, nil
	}
	b, err := atomicio.ReadFileMax(value, atomicio.MaxJSONBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %q is neither %s, a named template (%s) nor a readable template file: %w",
			key, value, config.ChatTemplateSnapshot, strings.Join(chattemplate.Names(), ", "), err)
	}
	return string(b), nil
}

// loadChat is LoadChat with template, when not empty, in place of the chat template of dir's
// tokenizer_config.json (its special tokens kept).
func loadChat(dir, template string, eos []int, vocab int) (*Chat, error) {
	return loadChatFrom(checkpoint.DirFiles(dir), dir, template, eos, vocab)
}

// loadChatFrom is loadChat of the files of dir as files reads them (a checkpoint's verified
// manifest: its tokenizer copies are not read again).
func loadChatFrom(files checkpoint.Reader, dir, template string, eos []int, vocab int) (*Chat, error) {
	tok, err := loadTokenizer(files, dir)
	if err != nil {
		return nil, err
	}
	if vocab > 0 {
		if err := tok.CheckFits(vocab, "the model"); err != nil {
			return nil, err
		}
		for _, id := range eos {
			if id < 0 || id >= vocab {
				return nil, fmt.Errorf("%s: eos_token_id %d is outside the vocabulary (vocab_size %d)", filepath.Join(dir, snapshot.ConfigFile), id, vocab)
			}
		}
	}
	tpl, err := chatTemplate(files, dir, template)
	if err != nil {
		return nil, fmt.Errorf("%w (a pretrained model for tracksum needs a chat template: use an instruction-tuned checkpoint)", err)
	}
	c := &Chat{Tok: tok, Tpl: tpl}
	for _, id := range eos {
		c.addStop(int32(id))
	}
	if s, ok := tpl.SpecialTokens["eos_token"].(string); ok {
		if id, ok := c.single(s); ok {
			c.addStop(id)
		}
	}
	// The end-of-turn marker is what the template writes right after an assistant's content.
	if end, err := c.turnEnd(); err == nil && end != "" {
		if ids := tok.Encode(end, false); len(ids) > 0 {
			if id, ok := c.single(strings.TrimSpace(tok.Decode(ids[:1]))); ok {
				c.addStop(id)
			}
		}
	}
	if len(c.Stop) == 0 {
		return nil, fmt.Errorf("%s: no end-of-answer token (eos_token in tokenizer_config.json, or eos_token_id in config.json)", filepath.Join(dir, snapshot.TokenizerConfigFile))
	}
	c.Pad = c.Stop[0]
	if s, ok := tpl.SpecialTokens["pad_token"].(string); ok {
		if id, ok := c.single(s); ok {
			c.Pad = id
		}
	}
	return c, nil
}

func (c *Chat) addStop(id int32) {
	for _, s := range c.Stop {
		if s == id {
			return
		}
	}
	c.Stop = append(c.Stop, id)
}

// single returns the id of text when it encodes to exactly one token (a special token).
func (c *Chat) single(text string) (int32, bool) {
	if text == "" {
		return 0, false
	}
	ids := c.Tok.Encode(text, false)
	if len(ids) != 1 {
		return 0, false
	}
	return int32(ids[0]), true
}

// turnEnd is the text the template writes after an assistant turn's content, up to the first line
// break or the end: rendered with a marker answer and read after it.
func (c *Chat) turnEnd() (string, error) {
	const marker = "TRACKSUMANSWERMARKER"
	full, err := c.Tpl.Render([]chattemplate.Message{{Role: "user", Content: "x"}, {Role: "assistant", Content: marker}}, chattemplate.Options{})
	if err != nil {
		return "", err
	}
	i := strings.LastIndex(full, marker)
	if i < 0 {
		return "", nil
	}
	rest := full[i+len(marker):]
	if j := strings.IndexAny(rest, "\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest, nil
}

// Prompt returns the ids of msgs rendered with the generation prompt (the assistant header): what
// the model reads before it answers.
func (c *Chat) Prompt(msgs []chattemplate.Message) ([]int32, error) {
	s, err := c.Tpl.Render(msgs, chattemplate.Options{AddGenerationPrompt: true})
	if err != nil {
		return nil, err
	}
	return toInt32(c.Tok.Encode(s, false)), nil
}

// ErrTemplateAnswer marks a chat template whose rendering of a conversation with its answer does
// not start with the rendering of the same conversation with the generation prompt: the answer's
// tokens cannot be told from the prompt's.
var ErrTemplateAnswer = errors.New("chat template: the assistant turn does not follow the generation prompt")

// Answer returns the ids of the prompt (as Prompt) and, separately, of the assistant turn that
// answer makes after it, end-of-turn token included: the text the template writes for the turn
// beyond the generation prompt (some templates add more than the answer, e.g. Qwen 3's empty
// <think> block). The two are tokenized apart, as they are at inference (prompt, then generated
// ids), so that the boundary is the same in training and in generation.
func (c *Chat) Answer(msgs []chattemplate.Message, answer string) (prompt, turn []int32, err error) {
	pre, err := c.Tpl.Render(msgs, chattemplate.Options{AddGenerationPrompt: true})
	if err != nil {
		return nil, nil, err
	}
	full, err := c.Tpl.Render(append(msgs[:len(msgs):len(msgs)], chattemplate.Message{Role: "assistant", Content: answer}), chattemplate.Options{})
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(full, pre) {
		return nil, nil, fmt.Errorf("%s: %w", c.Tpl.Path, ErrTemplateAnswer)
	}
	return toInt32(c.Tok.Encode(pre, false)), toInt32(c.Tok.Encode(full[len(pre):], false)), nil
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// Truncate keeps the first n tokens of text (all when it has no more), decoded back to text.
func (c *Chat) Truncate(text string, n int) string {
	ids := c.Tok.Encode(text, false)
	if len(ids) <= n {
		return text
	}
	return c.Tok.Decode(ids[:max(n, 0)])
}

// Example is one training sequence: Tokens, and Labels aligned with them (transformers'
// convention: the label of position t is predicted from positions < t) that are decoder.IgnoreLabel on the
// prompt, so that the loss covers the answer tokens only.
type Example struct {
	Tokens, Labels []int32
	// Types are BERT's token type ids (segment 0 or 1) of an encoder pair; nil for a causal LM.
	Types []int32
	// Target is the class of a classification example (0 or 1); Weight its loss weight.
	Target, Weight float32
}

// AnswerExample joins prompt and turn into an Example whose loss covers the turn only.
func AnswerExample(prompt, turn []int32) Example {
	e := Example{Tokens: append(append([]int32{}, prompt...), turn...), Weight: 1}
	e.Labels = make([]int32, len(e.Tokens))
	for i := range e.Labels {
		if i < len(prompt) {
			e.Labels[i] = decoder.IgnoreLabel
		} else {
			e.Labels[i] = e.Tokens[i]
		}
	}
	return e
}

// fit builds a conversation that fits in maxLen tokens: build(cut) returns the conversation with
// cut tokens taken away from its variable text, and the tokens it takes (prompt plus answer turn).
// It retries with a larger cut until it fits, and fails when it cannot (the fixed part of the
// prompt alone is too long).
func fit(maxLen int, what string, build func(cut int) (n int, err error)) (int, error) {
	cut := 0
	for range 8 {
		n, err := build(cut)
		if err != nil {
			return 0, err
		}
		if n <= maxLen {
			return cut, nil
		}
		cut += n - maxLen
	}
	return 0, fmt.Errorf("%s does not fit in max_seq_len %d tokens even with its text cut: raise max_seq_len", what, maxLen)
}

// chatTemplate parses the chat template of dir's tokenizer_config.json (read through files), or
// template, when not empty, in its place with that file's special tokens.
func chatTemplate(files checkpoint.Reader, dir, template string) (*chattemplate.Template, error) {
	path := filepath.Join(dir, snapshot.TokenizerConfigFile)
	data, err := files.ReadFile(snapshot.TokenizerConfigFile)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if template != "" {
		if data, err = chattemplate.WithTemplate(path, data, template); err != nil {
			return nil, err
		}
	}
	return chattemplate.Parse(path, data, "default")
}
