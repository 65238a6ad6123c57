#!/usr/bin/env bash
# Makes sure PostgreSQL's server programs (initdb, postgres) are installed, for the tests that start
# a real PostgreSQL server (test/harness/postgres-server.ts). Debian's `postgresql` package (apt,
# as root or with passwordless sudo); idempotent. Fails loudly when it cannot install it: the SQL
# store tests never skip.
#   PG_BIN=/path/to/postgresql/bin  use another PostgreSQL installation instead.
set -euo pipefail
if [[ -n "${PG_BIN:-}" ]]; then
  if [[ -x "$PG_BIN/initdb" ]]; then exit 0; fi
  echo "install-postgres: PG_BIN=$PG_BIN has no executable initdb" >&2
  exit 1
fi
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then exit 0; fi
if [[ "$(id -u)" == "0" ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "install-postgres: PostgreSQL is missing and this user cannot install it (not root, no passwordless sudo)." >&2
  echo "  Install it as root: apt-get install -y postgresql   (or set PG_BIN to its bin directory)" >&2
  exit 1
fi
echo "installing postgresql (apt) for the SQL store's tests" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq postgresql >/dev/null
