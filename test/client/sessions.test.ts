import { describe, expect, it } from "vitest";
import { Code, ConnectError, createAgentClient } from "../../src/client/index.js";
import { useAgentd } from "../harness/use-agentd.js";

const agentd = useAgentd();
const client = () => createAgentClient(agentd.server.baseUrl, { protocol: "grpc" });

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("TypeScript client: sessions", () => {
  it("creates labelled sessions, lists them by label across pages, updates and deletes one", async () => {
    const c = client();
    const run = `ts-${Date.now()}`;
    const ids: string[] = [];
    for (const color of ["red", "blue", "red"])
      ids.push((await c.run("assistant", "hi", { labels: { run, color }, ttlMs: 3_600_000 })).sessionId);
    const listed = await collect(c.listSessions({ labels: { run }, pageSize: 2 }));
    expect(listed.map((s) => s.sessionId)).toEqual([...ids].reverse());
    expect(listed[0]).toMatchObject({
      agent: "assistant",
      labels: { run, color: "red" },
      turnCount: 1,
      headStatus: "completed",
      ttlMs: 3_600_000,
    });
    expect(listed[0]!.expiresAt! - listed[0]!.updatedAt).toBe(3_600_000);
    expect((await collect(c.listSessions({ labels: { run, color: "red" } }))).map((s) => s.sessionId)).toEqual([
      ids[2],
      ids[0],
    ]);

    const updated = await c.updateSession(ids[1]!, { setLabels: { color: "green" }, ttlMs: null });
    expect(updated.labels).toEqual({ run, color: "green" });
    expect(updated.expiresAt).toBeUndefined();

    expect(await c.deleteSession(ids[0]!)).toBe(true);
    expect(await c.deleteSession(ids[0]!)).toBe(false);
    const gone = await c.getSession(ids[0]!).catch((err: unknown) => ConnectError.from(err));
    expect(gone).toBeInstanceOf(ConnectError);
    expect((gone as ConnectError).code).toBe(Code.NotFound);
    expect((await c.getSession(ids[2]!)).labels).toEqual({ run, color: "red" });
  });
});
