#!/usr/bin/env bash
# Fails when gen/ is stale: regenerates every target into a temporary directory
# and compares it with the committed gen/ (hand-written go.mod, pyproject.toml
# and __init__.py files aside; build/, *.egg-info and __pycache__, which
# `pip install ./gen/python` leaves behind, are not generated code).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-tools.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npx buf generate --template buf.gen.yaml -o "$tmp"
npx buf generate --template buf.gen.grpc.yaml -o "$tmp"
node scripts/source-info-module.mjs "$tmp/gen/ts"
find "$tmp/gen/python/src/agentd" -type d -exec touch {}/__init__.py \;
if ! diff -r -q -x go.mod -x go.sum -x pyproject.toml -x '*.egg-info' -x __pycache__ -x build "$tmp/gen" gen >"$tmp/diff.txt"; then
  echo "gen/ is stale: run 'npm run generate' and commit gen/" >&2
  cat "$tmp/diff.txt" >&2
  exit 1
fi
echo "gen/ is up to date"
