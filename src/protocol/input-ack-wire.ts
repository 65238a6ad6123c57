import { create } from "@bufbuild/protobuf";
import {
  InputAckResult as WireInputAckResult,
  InputAckSchema,
  type InputAck as WireInputAck,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import type { InputAck, InputAckResult } from "../types/agent-io.js";

const TO_WIRE: Record<InputAckResult, WireInputAckResult> = {
  cancelled: WireInputAckResult.CANCELLED,
  nothing_to_cancel: WireInputAckResult.NOTHING_TO_CANCEL,
  steered: WireInputAckResult.STEERED,
  queued: WireInputAckResult.QUEUED,
};

const FROM_WIRE = new Map<WireInputAckResult, InputAckResult>(
  Object.entries(TO_WIRE).map(([k, v]) => [v, k as InputAckResult]),
);

/** An input ack as `agentd.v1.InputAck`. */
export function inputAckToWire(ack: InputAck): WireInputAck {
  return create(InputAckSchema, {
    requestId: ack.requestId ?? "",
    result: TO_WIRE[ack.result],
    turnIndex: ack.turnIndex ?? 0,
  });
}

/** An `agentd.v1.InputAck` as an input ack (an unspecified or unknown result reads as `nothing_to_cancel`: nothing is known to have happened). */
export function inputAckFromWire(ack: WireInputAck): InputAck {
  return {
    ...(ack.requestId ? { requestId: ack.requestId } : {}),
    result: FROM_WIRE.get(ack.result) ?? "nothing_to_cancel",
    turnIndex: ack.turnIndex,
  };
}
