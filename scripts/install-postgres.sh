#!/usr/bin/env bash
# Makes sure PostgreSQL's server programs (initdb, postgres) are installed, for the tests that start
# a real PostgreSQL server (test/harness/postgres-server.ts). Debian's `postgresql` package; idempotent.
set -euo pipefail
if [[ -n "${PG_BIN:-}" && -x "$PG_BIN/initdb" ]]; then exit 0; fi
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then exit 0; fi
if [[ "$(id -u)" != 0 ]]; then
  echo "PostgreSQL is not installed: run 'sudo apt-get install -y postgresql' (or set PG_BIN to its bin directory)" >&2
  exit 1
fi
echo "installing postgresql (Debian package)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
