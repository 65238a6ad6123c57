/**
 * The protocol layer, shared by the server and the client (neither imports the
 * other): conversions between `agentd.v1` protobuf messages and the runtime
 * types (every `xToWire` / `xFromWire` pair round-trips the runtime value), the
 * gRPC status-code table. It re-exports the content codecs of src/codec/
 * (which the runtime uses too); the stream utilities it once held (async
 * channel, FIFO queue, stream tap, custom-state patches) live in src/streams/.
 */
export * from "./agent-info-wire.js";
export * from "../codec/content-wire.js";
export * from "../codec/enum-wire.js";
export * from "../codec/json-wire.js";
export * from "./snapshot-wire.js";
export * from "./state-wire.js";
export * from "./stream-wire.js";
export * from "./session-wire.js";
export * from "./usage-wire.js";
export * from "./input-ack-wire.js";
export * from "./status-codes.js";
