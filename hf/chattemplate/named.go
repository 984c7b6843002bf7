package chattemplate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/tracksum/tracksum/internal/atomicio"
)

// named are chat templates known by name, for a model whose own template is not the one it was
// trained with (config's TASK.chat_template).
//
// llama-3 is Unsloth's "llama-3" template (unsloth/chat_templates.py, llama3_template, as of
// commit 015bdef0), which the TracSum authors' scripts apply with get_chat_template(tokenizer,
// chat_template="llama-3"): bos_token, then each message as <|start_header_id|>ROLE
// <|end_header_id|>\n\n + its content trimmed + <|eot_id|>, and the assistant header for a
// generation prompt. Unlike Llama-3.1-Instruct's own template it writes no system block of its
// own ("Cutting Knowledge Date ... Today Date ...", 25 tokens before every prompt).
var named = map[string]string{
	"llama-3": "{{ bos_token }}" +
		"{% for message in messages %}" +
		"{% if message['role'] == 'user' %}" +
		"{{ '<|start_header_id|>user<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}" +
		"{% elif message['role'] == 'assistant' %}" +
		"{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}" +
		"{% else %}" +
		"{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}" +
		"{% endif %}" +
		"{% endfor %}" +
		"{% if add_generation_prompt %}" +
		"{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}" +
		"{% endif %}",
}

// NamedSource returns the Jinja source of the chat template called name, and false for no such
// template.
func NamedSource(name string) (string, bool) {
	s, ok := named[name]
	return s, ok
}

// Names lists the named templates, sorted.
func Names() []string { return slices.Sorted(maps.Keys(named)) }

// WithTemplate returns data, the content of the tokenizer_config.json at path, with its
// chat_template replaced by source (the other keys, special tokens included, kept), for a model
// trained with another template than its snapshot's: the checkpoint's copy then holds the one it
// was trained with.
func WithTemplate(path string, data []byte, source string) ([]byte, error) {
	var raw map[string]json.RawMessage
	if err := atomicio.DecodeJSON(path, data, &raw, false); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	s, err := json.Marshal(source)
	if err != nil {
		return nil, fmt.Errorf("%s: chat template: %w", path, err)
	}
	raw["chat_template"] = s
	return json.MarshalIndent(raw, "", "  ")
}
