/**
 * Conversions between `agentd.v1` protobuf messages and the runtime types.
 * Every `xToWire` / `xFromWire` pair round-trips the runtime value.
 */
export * from "./agent-info-wire.js";
export * from "./content-wire.js";
export * from "./enum-wire.js";
export * from "./json-wire.js";
export * from "./snapshot-wire.js";
export * from "./state-wire.js";
export * from "./stream-wire.js";
export * from "./session-wire.js";
