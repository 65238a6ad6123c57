#!/usr/bin/env python3
"""A buf/protoc plugin that produces Python protobuf modules (+ .pyi) and grpcio
stubs by delegating to the official generators bundled in grpcio-tools.

buf hands a plugin a CodeGeneratorRequest on stdin; grpcio-tools only exposes
protoc itself, so this writes the request's descriptors to a descriptor set,
runs grpc_tools.protoc on it, and answers with the files it produced.
"""
import os
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def main() -> int:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    response = plugin_pb2.CodeGeneratorResponse()
    response.supported_features = plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    with tempfile.TemporaryDirectory() as tmp:
        descriptor_set = descriptor_pb2.FileDescriptorSet(file=list(request.proto_file))
        set_path = os.path.join(tmp, "input.binpb")
        with open(set_path, "wb") as f:
            f.write(descriptor_set.SerializeToString())
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        code = protoc.main([
            "grpc_tools.protoc",
            f"--descriptor_set_in={set_path}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *request.file_to_generate,
        ])
        if code != 0:
            response.error = f"grpc_tools.protoc exited with {code}"
        else:
            for root, _, files in os.walk(out):
                for name in sorted(files):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        response.file.add(name=os.path.relpath(path, out), content=f.read())
    sys.stdout.buffer.write(response.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
