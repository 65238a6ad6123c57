import { describe, expect, it, vi } from "vitest";
import { expectAgentError, harness, register, replyTurn } from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  applyChunkTransform,
  applyStateTransform,
  type TransformContext,
} from "../../src/runtime/agents/state-transform.js";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { userText } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";

vi.setConfig({ testTimeout: 5_000 });

const ctx: TransformContext = { agent: "a" };
const state = (): SessionState<{ secret: string; visible: string }> => ({
  sessionId: "s",
  messages: [userText("hi")],
  artifacts: [],
  custom: { secret: "x", visible: "y" },
});
const chunk = (): AgentStreamChunk => ({ modelChunk: { role: "model", content: [{ text: "t" }] } });

describe("applyStateTransform", () => {
  it("without a transform resolves to a deep copy of the state", async () => {
    const original = state();
    const copy = await applyStateTransform(undefined, original, ctx);
    expect(copy).toEqual(original);
    expect(copy).not.toBe(original);
    expect(copy!.custom).not.toBe(original.custom);
  });

  it("hands the transform its own deep copy (its changes never reach the original) and the call context", async () => {
    const original = state();
    const contexts: TransformContext[] = [];
    const result = await applyStateTransform(
      (s, c) => {
        contexts.push(c);
        delete (s.custom as { secret?: string }).secret;
        s.messages[0]!.content[0]!.text = "changed";
        return s;
      },
      original,
      { agent: "a", headers: new Headers({ h: "1" }) },
    );
    expect(result).toEqual({
      sessionId: "s",
      messages: [userText("changed")],
      artifacts: [],
      custom: { visible: "y" },
    });
    expect(original).toEqual(state());
    expect(contexts[0]!.agent).toBe("a");
    expect(contexts[0]!.headers!.get("h")).toBe("1");
  });

  it("awaits an async transform and uses the value it returns", async () => {
    const result = await applyStateTransform(async () => ({ messages: [], artifacts: [] }), state(), ctx);
    expect(result).toEqual({ messages: [], artifacts: [] });
  });

  it("resolves to undefined when the transform returns null (the state is omitted)", async () => {
    expect(await applyStateTransform(() => null, state(), ctx)).toBeUndefined();
  });

  it("fails with PERMISSION_DENIED naming the state transform on a plain error, keeping it as the cause", async () => {
    const boom = new Error("boom");
    const error = await expectAgentError(
      applyStateTransform(
        () => {
          throw boom;
        },
        state(),
        ctx,
      ),
      "PERMISSION_DENIED",
      /^state transform failed: boom$/,
    );
    expect(error.cause).toBe(boom);
  });

  it("describes a thrown non-Error value by its string form", async () => {
    await expectAgentError(
      applyStateTransform(
        () => {
          throw "just a string";
        },
        state(),
        ctx,
      ),
      "PERMISSION_DENIED",
      /^state transform failed: just a string$/,
    );
  });

  it("passes an AgentError thrown by the transform through unchanged", async () => {
    const own = new AgentError("UNAUTHENTICATED", "log in");
    await expect(
      applyStateTransform(
        async () => {
          throw own;
        },
        state(),
        ctx,
      ),
    ).rejects.toBe(own);
  });
});

describe("applyChunkTransform", () => {
  it("without a transform passes the chunk itself through", async () => {
    const original = chunk();
    expect(await applyChunkTransform(undefined, original, ctx)).toBe(original);
  });

  it("hands the transform a deep copy and resolves to what it returns", async () => {
    const original = chunk();
    const result = await applyChunkTransform(
      (c) => {
        c.modelChunk!.content[0]!.text = "T";
        return c;
      },
      original,
      ctx,
    );
    expect(result).toEqual({ modelChunk: { role: "model", content: [{ text: "T" }] } });
    expect(original).toEqual(chunk());
  });

  it("resolves to undefined (drop) when the transform returns null", async () => {
    expect(await applyChunkTransform(async () => null, chunk(), ctx)).toBeUndefined();
  });

  it("fails with PERMISSION_DENIED naming the chunk transform, and passes AgentErrors through", async () => {
    await expectAgentError(
      applyChunkTransform(
        () => {
          throw new Error("bad chunk");
        },
        chunk(),
        ctx,
      ),
      "PERMISSION_DENIED",
      /^chunk transform failed: bad chunk$/,
    );
    const own = new AgentError("RESOURCE_EXHAUSTED", "quota");
    await expect(
      applyChunkTransform(
        () => {
          throw own;
        },
        chunk(),
        ctx,
      ),
    ).rejects.toBe(own);
  });
});

describe("state transforms on snapshot reads", () => {
  const secretAgent = () => {
    const { store, registry } = harness();
    const agent = register<{ visible: string; secret?: string }>(registry, {
      name: "redacted",
      store: "default",
      transforms: {
        state: (s, c) => {
          if (c.headers?.get("x-refuse")) throw new AgentError("PERMISSION_DENIED", "refused");
          if (c.principal?.subject === "hide-all") return null;
          delete s.custom!.secret;
          return s;
        },
      },
      turn: async (input, ctx) => {
        ctx.session.updateCustom(() => ({ visible: "v", secret: "s3cret" }));
        await replyTurn(input, ctx);
      },
    });
    return { store, agent };
  };

  it("shapes what GetSnapshot returns while the store keeps the raw state", async () => {
    const { store, agent } = secretAgent();
    const output = await agent.runText("hi");
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(snapshot.state!.custom).toEqual({ visible: "v" });
    expect((await store.getRecord(output.snapshotId!))!.checkpoint!.custom).toEqual({ visible: "v", secret: "s3cret" });
  });

  it("shapes the states ListSnapshots includes", async () => {
    const { agent } = secretAgent();
    const output = await agent.runText("hi");
    const page = await agent.listSnapshots(output.sessionId, { includeState: true });
    expect(page.snapshots.map((s) => s.state!.custom)).toEqual([{ visible: "v" }]);
  });

  it("omits the state of a read when the transform returns null", async () => {
    const { agent } = secretAgent();
    const output = await agent.runText("hi");
    const snapshot = await agent.getSnapshot(
      { snapshotId: output.snapshotId! },
      { principal: { subject: "hide-all", tenant: "", claims: {} } },
    );
    expect(snapshot.state).toBeUndefined();
    expect(snapshot.status).toBe("completed");
  });

  it("fails a read closed with the transform's error, using the read's headers", async () => {
    const { agent } = secretAgent();
    const output = await agent.runText("hi");
    await expectAgentError(
      agent.getSnapshot({ snapshotId: output.snapshotId! }, { headers: new Headers({ "x-refuse": "1" }) }),
      "PERMISSION_DENIED",
      /^refused$/,
    );
  });
});

describe("state transforms on the invocation's output", () => {
  const maskingAgent = () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "masking",
      store: "default",
      transforms: {
        state: (s, c) => {
          if (c.principal?.subject === "hide-all") return null;
          for (const m of s.messages)
            for (const p of m.content) if (p.text) p.text = p.text.replaceAll("hunter2", "*******");
          s.artifacts = s.artifacts.filter((a) => a.name !== "secret.txt");
          return s;
        },
      },
      turn: async (input, ctx) => {
        ctx.responder.sendArtifact({ name: "secret.txt", parts: [{ text: "hunter2" }] });
        await replyTurn(input, ctx);
      },
    });
    return { store, agent };
  };

  it("shapes the output's message and artifacts like the state, while the store keeps them raw", async () => {
    const { store, agent } = maskingAgent();
    const output = await agent.runText("my password is hunter2");
    expect(output.message!.content[0]!.text).toBe("reply: my password is *******");
    expect(output.artifacts).toEqual([]);
    const raw = (await store.getRecord(output.snapshotId!))!.checkpoint!;
    expect(raw.messages.at(-1)!.content[0]!.text).toBe("reply: my password is hunter2");
    expect(raw.artifacts.map((a) => a.name)).toEqual(["secret.txt"]);
  });

  it("leaves the output's message and artifacts out when the transform omits the state", async () => {
    const { agent } = maskingAgent();
    const output = await agent.runText("hunter2", {}, { principal: { subject: "hide-all", tenant: "", claims: {} } });
    expect(output.finishReason).toBe("stop");
    expect(output.message).toBeUndefined();
    expect(output.artifacts).toEqual([]);
  });
});

describe("chunk transforms and commits", () => {
  it("commits nothing for a turn whose chunk transform fails: the invocation fails closed with the transform's error", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "refusing",
      store: "default",
      transforms: {
        chunk: (c) => {
          if (c.modelChunk) throw new AgentError("PERMISSION_DENIED", "chunk refused");
          return c;
        },
      },
      turn: replyTurn,
    });
    await expectAgentError(agent.runText("hi"), "PERMISSION_DENIED", /chunk refused/);
    expect(store.sizes()).toMatchObject({ heads: 0, records: 0 });
  });
});
