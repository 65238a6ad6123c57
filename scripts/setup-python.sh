#!/usr/bin/env bash
# Installs the Python client (clients/python, import agentd_client) and the generated
# messages (gen/python, import agentd.v1) into the venv .tools/venv, editable, with the exact
# dependency versions of clients/python/requirements.lock (pytest and the OpenTelemetry SDK and
# gRPC instrumentation included). Idempotent: re-runs only when the lock or a pyproject.toml
# changed. Needs python3 (>= 3.11: the pinned test dependencies need it) and PyPI.
# Then: .tools/venv/bin/pytest clients/python
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.tools/venv
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p .tools
  python3 -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

inputs=(clients/python/requirements.lock clients/python/pyproject.toml gen/python/pyproject.toml)
want="$(cat "${inputs[@]}" | sha256sum | cut -d' ' -f1)"
stamp="$venv/.agentd-client.sha256"
if [[ "$(cat "$stamp" 2>/dev/null)" == "$want" ]] \
  && "$venv/bin/python" -c 'import agentd_client, agentd.v1.agent_service_pb2_grpc' 2>/dev/null; then
  exit 0
fi

echo "setup-python: installing agentd-proto and agentd-client[test] into $venv" >&2
"${pip[@]}" install --quiet -r clients/python/requirements.lock
# --no-deps: the dependencies are exactly the locked ones installed above.
"${pip[@]}" install --quiet --no-deps -e ./gen/python -e ./clients/python
"$venv/bin/python" -c 'import agentd_client, agentd.v1.agent_service_pb2_grpc'
if ! "${pip[@]}" check >&2; then
  echo "setup-python: warning: declared requirements disagree with the locked versions (see above)" >&2
fi
echo "$want" >"$stamp"
