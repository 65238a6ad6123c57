import { describe, expect, it } from "vitest";
import { CpuShare } from "../../src/runtime/sessions/cpu-share.js";
import { AgentError } from "../../src/errors/agent-error.js";

/** Submits `count` steps of `tenant` that record their run in `order`. */
function submit(share: CpuShare, tenant: string, count: number, order: string[], signal?: AbortSignal) {
  return Array.from({ length: count }, (_, i) => share.run(tenant, () => order.push(`${tenant}${i}`), signal));
}

describe("CpuShare", () => {
  it("runs a step at once on an idle share, then one step per turn of the event loop", async () => {
    const share = new CpuShare();
    const order: string[] = [];
    const all = submit(share, "b", 3, order);
    expect(order).toEqual(["b0"]); // the first ran synchronously
    expect(share.queued).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(["b0", "b1"]);
    await Promise.all(all);
    expect(order).toEqual(["b0", "b1", "b2"]);
  });

  it("serves waiting tenants in turn: a tenant's flood delays another's step by one of its steps", async () => {
    const share = new CpuShare();
    const order: string[] = [];
    const flood = submit(share, "b", 10, order); // b0 runs at once; b1..b9 wait
    const light = submit(share, "a", 2, order);
    await Promise.all([...flood, ...light]);
    expect(order).toEqual(["b0", "b1", "a0", "b2", "a1", "b3", "b4", "b5", "b6", "b7", "b8", "b9"]);
  });

  it("gives each tenant weight(tenant) steps per round", async () => {
    const share = new CpuShare((tenant) => (tenant === "a" ? 2 : 1));
    const order: string[] = [];
    const started = share.run("x", () => order.push("x"));
    const all = [...submit(share, "b", 4, order), ...submit(share, "a", 4, order)];
    await Promise.all([started, ...all]);
    expect(order).toEqual(["x", "b0", "a0", "a1", "b1", "a2", "a3", "b2", "b3"]);
  });

  it("rejects with the step's error, and drops a waiting step whose call was cancelled (CANCELLED)", async () => {
    const share = new CpuShare();
    const order: string[] = [];
    const first = share.run("a", () => {
      throw new AgentError("INVALID_ARGUMENT", "bad patch");
    });
    await expect(first).rejects.toThrow("bad patch");
    const controller = new AbortController();
    const [kept] = submit(share, "a", 1, order);
    const [dropped] = submit(share, "b", 1, order, controller.signal);
    controller.abort();
    await expect(dropped).rejects.toMatchObject({ status: "CANCELLED" });
    await kept;
    expect(order).toEqual(["a0"]);
  });
});
