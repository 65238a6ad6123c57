import { describe, expect, it } from "vitest";
import { BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { busyPolicyFromWire, busyPolicyToWire } from "../../src/codec/enum-wire.js";

describe("busy policy wire", () => {
  it.each([
    ["reject", BusyPolicy.REJECT],
    ["enqueue", BusyPolicy.ENQUEUE],
    ["interrupt", BusyPolicy.INTERRUPT],
  ] as const)("round-trips %s", (policy, wire) => {
    expect(busyPolicyToWire(policy)).toBe(wire);
    expect(busyPolicyFromWire(wire)).toBe(policy);
  });

  it("maps an absent policy to BUSY_POLICY_UNSPECIFIED and back to absent", () => {
    expect(busyPolicyToWire(undefined)).toBe(BusyPolicy.UNSPECIFIED);
    expect(busyPolicyFromWire(BusyPolicy.UNSPECIFIED)).toBeUndefined();
  });

  it("refuses an unknown number with INVALID_ARGUMENT listing the accepted values", () => {
    const read = () => busyPolicyFromWire(99 as BusyPolicy);
    expect(read).toThrow(AgentError);
    expect(read).toThrow(
      expect.objectContaining({
        status: "INVALID_ARGUMENT",
        message:
          "init.busy_policy: unknown value 99; use BUSY_POLICY_REJECT, BUSY_POLICY_ENQUEUE or BUSY_POLICY_INTERRUPT",
      }),
    );
  });
});
