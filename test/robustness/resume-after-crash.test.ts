import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd } from "../harness/agentd-process.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

describe("resume by session after a crash during detached work", () => {
  it("skips the expired head back to the last completed turn and continues from there", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-crash-resume-"));
    const doomed = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-interval-ms", "100"],
    });
    const first = agentServiceClient(doomed.baseUrl, "grpc");
    const done = await first.run({ init: { agent: "assistant" }, input: textInput("hello") });
    const sessionId = done.output!.sessionId;
    const completedId = done.output!.snapshotId;
    const { output: detached } = await first.run({
      init: { agent: "assistant", sessionId },
      input: { ...textInput("never finishes because the process dies", { echoDelayMs: 1000 }), detach: true },
    });
    await doomed.stop("SIGKILL");

    // --no-takeover: a survivor started within two TTLs of the last heartbeat would otherwise take
    // the dead worker's work over and finish it (work-takeover.test.ts), and the row would never
    // read expired; this test is about the crash nobody took over.
    const survivor = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-ttl-ms", "300", "--no-takeover"],
    });
    try {
      const client = agentServiceClient(survivor.baseUrl, "grpc");
      // The dead worker's heartbeat going stale is time passing, which no event announces:
      // poll until its row reads expired.
      const read = () => client.getSnapshot({ agent: "assistant", snapshotId: detached!.snapshotId });
      const statusOf = async () => (await read()).snapshot?.status;
      await until("the dead worker's row to read expired", async () => (await statusOf()) === SnapshotStatus.EXPIRED);

      // Not held up by the dead worker's lease: the default busy policy (REJECT) would fail ABORTED.
      const { output } = await client.run({
        init: { agent: "assistant", sessionId },
        input: textInput("after the crash"),
      });
      expect(output?.finishReason).toBe(FinishReason.STOP);
      expect(output?.sessionId).toBe(sessionId);
      const resumed = (await client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId })).snapshot;
      expect(resumed?.parentId).toBe(completedId);
      const head = (await client.getSnapshot({ agent: "assistant", sessionId })).snapshot;
      expect(head?.snapshotId).toBe(output!.snapshotId);
      expect(snapshotTexts(resumed)).toEqual(["hello", "echo: hello", "after the crash", "echo: after the crash"]);
    } finally {
      await survivor.stop();
      await doomed.stop("SIGKILL").catch(() => undefined);
    }
  });
});
