import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { agentdV1DescriptorSetWithSourceInfo } from "../../gen/ts/agentd/v1/source_info.js";

let cached: ReadonlyMap<string, FileDescriptorProto> | undefined;

/**
 * The agentd.v1 files' descriptors with source info (the comments of
 * proto/), by file name (`agentd/v1/agent.proto`, …), decoded once. Server
 * reflection serves these instead of the comment-less descriptors that the
 * generated code embeds.
 */
export function documentedDescriptors(): ReadonlyMap<string, FileDescriptorProto> {
  if (!cached) {
    const set = fromBinary(FileDescriptorSetSchema, Buffer.from(agentdV1DescriptorSetWithSourceInfo, "base64"));
    cached = new Map(set.file.map((file) => [file.name, file]));
  }
  return cached;
}
