#!/usr/bin/env bash
# Installs the Python MCP SDK (PyPI `mcp`, pinned with its dependencies in
# test/mcp/requirements.lock) into its own venv, .tools/mcp-venv (idempotent:
# reinstalls only when the lock file changed). The MCP tests use it for the
# Python tool servers (FastMCP) and the official Python MCP client.
# AGENTD_MCP_VENV overrides the venv's directory (the tests read it too).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${AGENTD_MCP_VENV:-.tools/mcp-venv}"
lock=test/mcp/requirements.lock
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi
stamp="$venv/.requirements.lock.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "installing the Python MCP SDK into $venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$lock"
  echo "$want" >"$stamp"
fi
