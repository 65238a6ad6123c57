import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import {
  DurationSchema,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";

/**
 * `google.rpc.RetryInfo` (google/rpc/error_details.proto): `retry_delay`, how
 * long a client should wait before retrying. Built from its descriptor here
 * so agentd needs no generated googleapis code; clients decode it with their
 * own `google.rpc.RetryInfo` (grpc-go `errdetails.RetryInfo`, Python
 * `google.rpc.error_details_pb2.RetryInfo`).
 */
export const RetryInfoSchema: DescMessage = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "google/rpc/error_details.proto",
    package: "google.rpc",
    dependency: ["google/protobuf/duration.proto"],
    syntax: "proto3",
    messageType: [
      {
        name: "RetryInfo",
        field: [
          {
            name: "retry_delay",
            jsonName: "retryDelay",
            number: 1,
            label: FieldDescriptorProto_Label.OPTIONAL,
            type: FieldDescriptorProto_Type.MESSAGE,
            typeName: ".google.protobuf.Duration",
          },
        ],
      },
    ],
  }),
  (name) => (name === "google/protobuf/duration.proto" ? file_google_protobuf_duration : undefined),
).getMessage("google.rpc.RetryInfo")!;

/**
 * A RESOURCE_EXHAUSTED error carrying `google.rpc.RetryInfo` with
 * `retryDelayMs` (rounded up to whole milliseconds) in its details — the
 * `grpc-status-details-bin` trailer over gRPC, the error's `details` over
 * Connect — and the same delay in the message.
 */
export function resourceExhausted(message: string, retryDelayMs: number): ConnectError {
  const ms = Math.max(1, Math.ceil(retryDelayMs));
  const retryDelay = create(DurationSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
  return new ConnectError(`${message}; retry in ${ms} ms`, Code.ResourceExhausted, undefined, [
    { desc: RetryInfoSchema, value: { retryDelay } },
  ]);
}
