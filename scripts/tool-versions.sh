# Pinned versions of the code generators and test tools, sourced by the scripts.
PROTOC_GEN_GO_VERSION=v1.36.11
PROTOC_GEN_GO_GRPC_VERSION=v1.6.1
PROTOC_GEN_CONNECT_GO_VERSION=v1.19.1
GRPCURL_VERSION=v1.9.3
GRPCIO_TOOLS_VERSION=1.85.1
