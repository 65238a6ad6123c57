import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { eventually, snapshotRow, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

const WRITER = join(dirname(fileURLToPath(import.meta.url)), "file-store-writer.ts");

/** Runs the writer script in a separate Node process via `npx tsx`. */
function runWriter(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("npx", ["tsx", WRITER, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`writer exited ${code}: ${err}`))));
  });
}

describe("file store across processes", () => {
  it("delivers a status change written by another process to a subscriber", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-file-xproc-"));
    const store = new FileSessionStore<CounterState>(dir, { pollIntervalMs: 0 }); // fs.watch alone must deliver
    await store.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
    const { seen, stop } = recordStatuses(store, "bg");
    await eventually(() => seen.length === 1);
    await runWriter([dir, "bg", "status", "aborted"]);
    await eventually(() => seen.length === 2, 5_000);
    await stop();
    expect(seen).toEqual(["pending", "aborted"]);
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("loses no update when two processes increment the same row concurrently", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-file-xproc-"));
    const store = new FileSessionStore<CounterState>(dir);
    await store.saveSnapshot("counter", () => snapshotRow("s1"));
    const inProcess = Promise.all(
      Array.from({ length: 30 }, () =>
        store.saveSnapshot("counter", (e) => ({ ...e!, state: { ...e!.state!, custom: { n: e!.state!.custom!.n + 1 } } })),
      ),
    );
    await Promise.all([inProcess, runWriter([dir, "counter", "increment", "30"])]);
    expect((await store.getSnapshot("counter"))!.state!.custom!.n).toBe(60);
    await rm(dir, { recursive: true, force: true });
  });
});
