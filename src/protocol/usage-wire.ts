import { create } from "@bufbuild/protobuf";
import { UsageSchema, type Usage as WireUsage } from "../../gen/ts/agentd/v1/state_pb.js";
import type { Usage } from "../types/usage.js";

/** Token usage as `agentd.v1.Usage` (int64 counts). */
export function usageToWire(usage: Usage): WireUsage {
  return create(UsageSchema, {
    inputTokens: BigInt(usage.inputTokens),
    outputTokens: BigInt(usage.outputTokens),
    totalTokens: BigInt(usage.totalTokens),
  });
}

/** An `agentd.v1.Usage` as token usage (counts as numbers; exact below 2^53). */
export function usageFromWire(usage: WireUsage): Usage {
  return {
    inputTokens: Number(usage.inputTokens),
    outputTokens: Number(usage.outputTokens),
    totalTokens: Number(usage.totalTokens),
  };
}

/** `{ usage }` in wire form when `usage` is set, else `{}` (for spreading into a message init). */
export function usageFieldToWire(usage: Usage | undefined): { usage?: WireUsage } {
  return usage ? { usage: usageToWire(usage) } : {};
}

/** `{ usage }` in runtime form when the wire message carries one, else `{}`. */
export function usageFieldFromWire(usage: WireUsage | undefined): { usage?: Usage } {
  return usage ? { usage: usageFromWire(usage) } : {};
}
