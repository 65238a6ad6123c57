#!/usr/bin/env bash
# Fails when proto/ (the agentd.v1 wire contract) would break an existing
# client: `buf breaking` against the committed image proto/baseline/agentd-v1.binpb,
# with the rules of buf.yaml's `breaking:` section (FILE: wire, JSON and the
# generated TypeScript, Go and Python code). Additive changes (new fields,
# enum values, RPCs, messages, files) pass.
#
#   bash scripts/check-proto-breaking.sh                    check (part of `npm test`)
#   bash scripts/check-proto-breaking.sh --update-baseline  move the baseline to proto/ as it is
#                                                           (`npm run proto:baseline`; deliberate,
#                                                           see CONTRIBUTING.md "Changing the wire contract")
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
baseline=proto/baseline/agentd-v1.binpb

if [[ "${1:-}" == "--update-baseline" ]]; then
  if [[ -f "$baseline" ]] && ! buf breaking proto --against "$baseline"; then
    echo "The baseline moves past the breaking changes above; say why in the commit." >&2
  fi
  mkdir -p "$(dirname "$baseline")"
  # Imports (the well-known types) stay in the image: buf needs them to compare.
  buf build proto --exclude-source-info -o "$baseline"
  echo "wrote $baseline"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--update-baseline]" >&2
  exit 2
fi

if [[ ! -f "$baseline" ]]; then
  echo "$baseline is missing: run 'npm run proto:baseline' on the released contract and commit it" >&2
  exit 1
fi
if ! buf breaking proto --against "$baseline"; then
  cat >&2 <<EOF
proto/ breaks the agentd.v1 wire contract (compared with $baseline): existing
TypeScript, Go and Python clients would break. Make the change additive (new
fields with new numbers, enum values, RPCs, messages), or, when the break is
intended, see CONTRIBUTING.md "Changing the wire contract".
EOF
  exit 1
fi
echo "proto/ is compatible with $baseline"
