#!/usr/bin/env bash
# The test command (`npm test`): every check and every test suite, in order.
# Installs the pinned tools it needs first (idempotent, fast once installed).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

step() { printf '\n=== %s\n' "$*"; }

step "tools"
bash scripts/install-tools.sh
bash scripts/setup-python.sh
bash scripts/install-chromium.sh
bash scripts/install-postgres.sh
npx tsx -e 'import("./test/harness/mongo-java-server.ts").then((m) => m.buildMongoJavaServer())'

step "proto lint and generated code"
npx buf lint
bash scripts/check-proto-breaking.sh
bash scripts/check-generated.sh

step "typecheck"
npx tsc --noEmit

step "lint (typescript-eslint, the layer rule of scripts/architecture-layers.mjs) and formatting (Prettier)"
npm run lint

step "build (the npm package: dist/ with type declarations)"
npm run build

step "TypeScript tests (unit, store conformance, end-to-end)"
npx vitest run

step "Go client tests"
(cd clients/go && go vet ./... && go test -count=1 ./...)

step "Python client tests"
.tools/venv/bin/python -m pytest -q clients/python
