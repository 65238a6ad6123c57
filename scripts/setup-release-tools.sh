#!/usr/bin/env bash
# Installs the Python release tools (build, twine, and setuptools for building without
# isolation) at pinned versions into their own venv, apart from the client's .tools/venv:
# AGENTD_RELEASE_VENV, default .tools/release-venv. Idempotent: re-installs only when the pins
# below change or the venv is broken. Needs python3 (>= 3.9) and PyPI.
# Then: scripts/release-check.sh (everything a release does but the upload).
set -euo pipefail
cd "$(dirname "$0")/.."

pins=(build==1.6.1 twine==7.0.0 setuptools==84.2.1 wheel==0.48.0)
venv="${AGENTD_RELEASE_VENV:-.tools/release-venv}"
stamp="$venv/.release-tools"
if [[ "$(cat "$stamp" 2>/dev/null)" == "${pins[*]}" ]] \
  && "$venv/bin/python" -c 'import build, twine, setuptools' 2>/dev/null; then
  exit 0
fi

echo "setup-release-tools: installing ${pins[*]} into $venv" >&2
mkdir -p "$(dirname "$venv")"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip --disable-pip-version-check install --quiet "${pins[@]}"
"$venv/bin/python" -c 'import build, twine, setuptools'
echo "${pins[*]}" >"$stamp"
