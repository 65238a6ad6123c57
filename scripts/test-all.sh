#!/usr/bin/env bash
# The test command (`npm test`): every check and every test suite. Every step
# runs even when one before it failed; the run ends with a summary table (step,
# result, seconds) and exits 1 when any step failed (scripts/run-steps.sh).
# Installs the pinned tools it needs first (idempotent, fast once installed).
#
# The Go and Python client suites, typecheck and lint run in the background
# beside the other checks and the TypeScript suite (each one's output is
# printed whole when it is collected).
#   npm test -- <vitest arguments>   passes the arguments to `vitest run`
#   TEST_STEPS=typecheck,lint npm test   runs only the named steps
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
source scripts/run-steps.sh

go_tests() {
  cd clients/go
  go vet ./...
  go test -count=1 ./...
}

mongo_java_server() {
  npx tsx -e 'import("./test/harness/mongo-java-server.ts").then((m) => m.buildMongoJavaServer())'
}

# Chromium and PostgreSQL both come from apt, which takes one lock: one step installs both, in turn.
system_packages() {
  bash scripts/install-chromium.sh
  bash scripts/install-postgres.sh
}

# Steps in the background run beside the others (a 2-core machine spends most of the TypeScript
# suite waiting on processes and sockets); each waits only for what it needs.
# The Go suite needs only Go and node_modules (its servers run from source through tsx).
start_step go "Go client tests (go vet, go test)" go_tests
run_step tools "tools: protoc plugins and grpcurl (scripts/install-tools.sh)" bash scripts/install-tools.sh
run_step python-env "tools: Python venv with the Python client (scripts/setup-python.sh)" bash scripts/setup-python.sh
start_step python "Python client tests (pytest)" .tools/venv/bin/python -m pytest -q clients/python
start_step release-tools "tools: Python release tools, build and twine (scripts/setup-release-tools.sh)" \
  bash scripts/setup-release-tools.sh
start_step mcp-python "tools: Python MCP SDK for the MCP tests (scripts/setup-mcp-python.sh)" \
  bash scripts/setup-mcp-python.sh
start_step system-packages "tools: Chromium for the inspector's browser tests and PostgreSQL for the SQL store's (apt)" \
  system_packages
start_step mongo-java-server "tools: the mongo-java-server launcher (Maven)" mongo_java_server
start_step typecheck "typecheck (tsc --noEmit)" npx tsc --noEmit
start_step lint "lint (typescript-eslint, the layer rule, Prettier, no import cycles)" npm run lint
run_step buf-lint "proto lint (buf lint)" npx buf lint
run_step proto-breaking "wire contract (scripts/check-proto-breaking.sh)" bash scripts/check-proto-breaking.sh
run_step generated "generated code is current (scripts/check-generated.sh)" bash scripts/check-generated.sh
# Before the TypeScript suite: its packaging tests pack this build (npm pack --ignore-scripts when
# AGENTD_TEST_DIST is set: this step ran prepack's `npm run build`). The suite's servers run from a
# copy of it (.test-dist/, AGENTD_TEST_DIST; see agentdCliArgs in test/harness/agentd-process.ts): a
# start costs about half the CPU of one through tsx, and a rebuild of dist/ meanwhile never pulls
# files from under a running server. Without a fresh build (it failed, or TEST_STEPS left it out)
# the servers run the sources through tsx and the packaging tests rebuild dist/ when they pack.
build_and_copy_for_tests() {
  npm run build
  cp -r dist .test-dist
}
rm -rf .test-dist
run_step build "build (the npm package: dist/ with type declarations)" build_and_copy_for_tests
# Decided here alone: a copy named by the environment this script was started in is not this build.
unset AGENTD_TEST_DIST
if [[ -f .test-dist/src/cli/main.js ]]; then export AGENTD_TEST_DIST="$PWD/.test-dist"; fi
wait_steps system-packages mongo-java-server release-tools mcp-python
run_step typescript "TypeScript tests (vitest: unit, store conformance, end-to-end)" npx vitest run "$@"
steps_summary
