import { create } from "@bufbuild/protobuf";
import { PendingInputSchema, type PendingInput as WirePendingInput } from "../../gen/ts/agentd/v1/state_pb.js";
import type { PendingInput } from "../types/snapshot.js";
import { messageFromWire, messageToWire, partFromWire, partToWire } from "../codec/content-wire.js";
import { optionalString } from "../codec/json-wire.js";

/** One input of a pending snapshot's detached work as `agentd.v1.PendingInput`. */
export function pendingInputToWire(input: PendingInput): WirePendingInput {
  return create(PendingInputSchema, {
    ...(input.message ? { message: messageToWire(input.message) } : {}),
    respond: (input.resume?.respond ?? []).map(partToWire),
    restart: (input.resume?.restart ?? []).map(partToWire),
    requestId: input.requestId ?? "",
    completed: input.completed,
  });
}

/** An `agentd.v1.PendingInput` as a pending input (an empty resume and request ID left out). */
export function pendingInputFromWire(input: WirePendingInput): PendingInput {
  const requestId = optionalString(input.requestId);
  const resume = {
    ...(input.respond.length ? { respond: input.respond.map(partFromWire) } : {}),
    ...(input.restart.length ? { restart: input.restart.map(partFromWire) } : {}),
  };
  return {
    ...(input.message ? { message: messageFromWire(input.message) } : {}),
    ...(resume.respond || resume.restart ? { resume } : {}),
    ...(requestId ? { requestId } : {}),
    completed: input.completed,
  };
}
