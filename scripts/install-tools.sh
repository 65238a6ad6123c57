#!/usr/bin/env bash
# Installs the pinned code generators and test tools into .tools/ (idempotent):
#   .tools/bin/protoc-gen-go, protoc-gen-go-grpc, protoc-gen-connect-go, grpcurl
#   .tools/venv  (Python with grpcio-tools, used by the Python plugin and tests)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tool-versions.sh
mkdir -p .tools/bin
export GOBIN="$PWD/.tools/bin"

install_go_tool() { # $1 binary name, $2 module@version
  local stamp=".tools/bin/.$1.version"
  if [[ -x ".tools/bin/$1" && "$(cat "$stamp" 2>/dev/null)" == "$2" ]]; then return; fi
  echo "installing $2" >&2
  go install "$2"
  echo "$2" >"$stamp"
}
install_go_tool protoc-gen-go "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
install_go_tool protoc-gen-go-grpc "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
install_go_tool protoc-gen-connect-go "connectrpc.com/connect/cmd/protoc-gen-connect-go@${PROTOC_GEN_CONNECT_GO_VERSION}"
install_go_tool grpcurl "github.com/fullstorydev/grpcurl/cmd/grpcurl@${GRPCURL_VERSION}"

if [[ ! -x .tools/venv/bin/python ]]; then
  python3 -m venv .tools/venv
fi
stamp=.tools/venv/.grpcio-tools.version
if [[ "$(cat "$stamp" 2>/dev/null)" != "$GRPCIO_TOOLS_VERSION" ]]; then
  .tools/venv/bin/pip install --quiet --disable-pip-version-check "grpcio-tools==${GRPCIO_TOOLS_VERSION}"
  echo "$GRPCIO_TOOLS_VERSION" >"$stamp"
fi
