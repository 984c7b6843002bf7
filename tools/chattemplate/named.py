#!/usr/bin/env python3
"""Writes hf/chattemplate/testdata/named_golden.json: renderings of the named chat templates
(hf/chattemplate/named.go) by Jinja2 configured as transformers' apply_chat_template configures it
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks).

The llama-3 source is Unsloth's llama3_template (unsloth/chat_templates.py, commit 015bdef0), the
template the TracSum authors' scripts apply with get_chat_template(chat_template="llama-3").
Run: python3 tools/chattemplate/named.py (needs jinja2).
"""
import json
import os

from jinja2.sandbox import ImmutableSandboxedEnvironment

LLAMA3 = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}"
    "{{ '<|start_header_id|>user<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% else %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}"
)

SYSTEM = {"role": "system", "content": "You are a great summarization assistant. Please follow the instructions strictly."}
USER = {"role": "user", "content": "Summarize the aspect.\nSentences: [\"We studied drug X.\"]\n"}
ANSWER = {"role": "assistant", "content": "Summary: Drug X was studied."}

CASES = [
    ("training conversation", [SYSTEM, USER, ANSWER], False),
    ("generation prompt", [SYSTEM, USER], True),
    ("user only", [{"role": "user", "content": "  padded  \n"}], True),
    ("other role", [{"role": "tool", "content": "x"}, USER], False),
]


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tpl = env.from_string(LLAMA3)
    cases = []
    for name, messages, gen in CASES:
        want = tpl.render(messages=messages, add_generation_prompt=gen, bos_token="<|begin_of_text|>")
        cases.append({"name": name, "messages": messages, "add_generation_prompt": gen, "want": want})
    out = {"templates": [{"name": "llama-3", "source": LLAMA3, "bos_token": "<|begin_of_text|>", "cases": cases}]}
    path = os.path.join(os.path.dirname(__file__), "..", "..", "hf", "chattemplate", "testdata", "named_golden.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
