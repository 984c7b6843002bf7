#!/usr/bin/env bash
# Installs the official `openai` npm client into tools/openaiclient/node_modules (git-ignored) so
# that serve's TestOpenAIClient can drive tracksum-serve with it. Needs npm and the npm registry;
# .ci/run calls it. Without it the test skips with a message.
set -euo pipefail
cd "$(dirname "$0")"
[ -f node_modules/openai/package.json ] && exit 0
npm install --no-audit --no-fund --silent
echo "openai client: $(node -p 'require("./node_modules/openai/package.json").version')"
