import { describe, expect, it } from "vitest";
import { agentInputFromWire, agentInputToWire } from "../../src/protocol/state-wire.js";
import { streamChunkFromWire, streamChunkToWire } from "../../src/protocol/stream-wire.js";
import type { InputAckResult } from "../../src/types/agent-io.js";

describe("control inputs and input acks on the wire", () => {
  it("round-trips a cancel input and a steer input", () => {
    expect(agentInputFromWire(agentInputToWire({ cancel: true, requestId: "c-1" }))).toStrictEqual({
      cancel: true,
      requestId: "c-1",
    });
    const steer = { steer: true, message: { role: "user" as const, content: [{ text: "pears" }] } };
    expect(agentInputFromWire(agentInputToWire(steer))).toStrictEqual(steer);
  });

  it.each<InputAckResult>(["cancelled", "nothing_to_cancel", "steered", "queued"])(
    "round-trips an input ack chunk with result %s",
    (result) => {
      const chunk = { inputAck: { requestId: "r-1", result, turnIndex: 3 }, sequence: 7 };
      expect(streamChunkFromWire(streamChunkToWire(chunk))).toStrictEqual(chunk);
    },
  );
});
