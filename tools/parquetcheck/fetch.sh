#!/usr/bin/env bash
# Installs DuckDB's node client into tools/parquetcheck/node_modules (git-ignored) so that
# dataset/prepare's TestShardsReadByDuckDB reads the prepared shards with an independent Parquet
# reader. Needs npm and the npm registry; .ci/run calls it. Without it the test skips with a message.
set -euo pipefail
cd "$(dirname "$0")"
[ -f node_modules/@duckdb/node-api/package.json ] && exit 0
npm install --no-audit --no-fund --silent
echo "duckdb node client: $(node -p 'require("./node_modules/@duckdb/node-api/package.json").version')"
