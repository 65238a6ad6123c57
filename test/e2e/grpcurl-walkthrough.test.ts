import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const GRPCURL = ".tools/bin/grpcurl";
const ADDRESS = "127.0.0.1:50051";

let server: ChildProcess;

/** Starts the README's run command, `npm start`, with no flags, and waits until it listens. */
beforeAll(async () => {
  server = spawn("npm", ["start"], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen:\n${out}`)), 60_000);
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes('"msg":"agentd listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${out}`)));
  });
});

afterAll(async () => {
  if (server?.pid && server.exitCode === null) {
    process.kill(-server.pid, "SIGTERM");
    await once(server, "exit");
  }
});

async function grpcurl(args: string[], input?: string): Promise<string> {
  const child = execFile(GRPCURL, ["-plaintext", ...args]);
  if (input !== undefined) child.stdin!.end(input);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`grpcurl ${args.join(" ")} exited ${code}: ${stderr}`);
  return stdout;
}

/** Splits grpcurl's stream of pretty-printed JSON messages. */
function messages(output: string): Record<string, any>[] {
  return output
    .split(/\n(?=\{)/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => JSON.parse(s));
}

describe("grpcurl against npm start", () => {
  it("lists the services by reflection", async () => {
    const services = (await grpcurl([ADDRESS, "list"])).split("\n");
    expect(services).toEqual(expect.arrayContaining(["agentd.v1.AgentService", "grpc.health.v1.Health"]));
  });

  it("describes the service without proto files", async () => {
    const text = await grpcurl([ADDRESS, "describe", "agentd.v1.AgentService"]);
    expect(text).toContain("rpc Chat ( stream .agentd.v1.ChatRequest ) returns ( stream .agentd.v1.ChatResponse );");
  });

  it("completes a two-turn Chat, then reads the session and resumes by snapshot", async () => {
    const requests = [
      { init: { agent: "assistant" }, input: { message: { role: "ROLE_USER", content: [{ text: "Hi there" }] } } },
      { input: { message: { role: "ROLE_USER", content: [{ text: "And again" }] } } },
    ];
    const responses = messages(await grpcurl(["-d", "@", ADDRESS, "agentd.v1.AgentService/Chat"], requests.map((r) => JSON.stringify(r)).join("\n")));
    const turnEnds = responses.filter((r) => r.chunk?.turnEnd).map((r) => r.chunk.turnEnd);
    expect(turnEnds.map((t) => t.turnIndex ?? 0)).toEqual([0, 1]);
    const output = responses.at(-1)!.output;
    expect(output.finishReason).toBe("FINISH_REASON_STOP");
    expect(output.message.content[0].text).toBe("echo: And again");

    const latest = JSON.parse(await grpcurl(["-d", JSON.stringify({ agent: "assistant", sessionId: output.sessionId }), ADDRESS, "agentd.v1.AgentService/GetSnapshot"]));
    expect(latest.snapshot.snapshotId).toBe(output.snapshotId);
    expect(latest.snapshot.state.messages).toHaveLength(4);

    const branch = JSON.parse(
      await grpcurl([
        "-d",
        JSON.stringify({ init: { agent: "assistant", snapshotId: turnEnds[0].snapshotId }, input: { message: { role: "ROLE_USER", content: [{ text: "A branch" }] } } }),
        ADDRESS,
        "agentd.v1.AgentService/Run",
      ]),
    );
    expect(branch.output.sessionId).toBe(output.sessionId);
    expect(branch.output.message.content[0].text).toBe("echo: A branch");
  });
});
