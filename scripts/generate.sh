#!/usr/bin/env bash
# Regenerates gen/ts, gen/go and gen/python from proto/ (and the gRPC health and
# reflection contracts in proto-vendor/ for TypeScript). Reproducible: the
# plugins are pinned in scripts/tool-versions.sh and package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-tools.sh
npx buf lint
rm -rf gen/ts gen/go/agentd gen/python/src/agentd
npx buf generate --template buf.gen.yaml
npx buf generate --template buf.gen.grpc.yaml
node scripts/source-info-module.mjs gen/ts
# Python packages need an __init__.py in each generated directory.
find gen/python/src/agentd -type d -exec touch {}/__init__.py \;
