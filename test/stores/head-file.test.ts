import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AgentError } from "../../src/errors/agent-error.js";
import { readHeadFile, readHeadFileOfKey, writeHeadFile } from "../../stores/file/head-file.js";
import { sessionKey } from "../../stores/file/store-layout.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { expectAgentError } from "../harness/agent-error-expectations.js";
import { useTempDirs } from "./file-fixtures.js";

// Session head files of the file store (stores/file/head-file.ts): `{"format":2,"head":{…}}`,
// read back by session ID or by session key, rejected as DATA_LOSS when not a valid head.

const tempDir = useTempDirs("agentd-head-file-");

function head(sessionId: string, version = 1): SessionHead {
  return {
    sessionId,
    agent: "counter",
    owner: "",
    headSnapshotId: `${sessionId}-snap`,
    turnCount: 1,
    version,
    createdAt: 1000,
    updatedAt: 2000,
  };
}

/** A head file in a fresh temporary directory holding exactly `text`. */
async function headFileWith(text: string): Promise<string> {
  const path = join(await tempDir(), "head.json");
  await writeFile(path, text);
  return path;
}

/** The DATA_LOSS AgentError `read` rejects with (fails the test on anything else). */
const rejection = (read: Promise<unknown>): Promise<AgentError> => expectAgentError(read, "DATA_LOSS");

describe("writeHeadFile", () => {
  it("stores the head under the current store format and resolves to it", async () => {
    const path = join(await tempDir(), "head.json");
    const stored = await writeHeadFile(path, head("s1"), false);
    expect(stored).toEqual(head("s1"));
    expect(JSON.parse(await readFile(path, "utf8"))).toEqual({ format: 2, head: head("s1") });
  });

  it("resolves to a deep-frozen head", async () => {
    const path = join(await tempDir(), "head.json");
    const stored = await writeHeadFile(path, { ...head("s1"), labels: { team: "a" } }, true);
    expect(Object.isFrozen(stored)).toBe(true);
    expect(Object.isFrozen(stored.labels)).toBe(true);
  });
});

describe("readHeadFile", () => {
  it("reads back the head that was written", async () => {
    const path = join(await tempDir(), "head.json");
    await writeHeadFile(path, head("s1", 7), false);
    expect(await readHeadFile(path, "s1")).toEqual(head("s1", 7));
  });

  it("resolves to undefined when the file does not exist", async () => {
    expect(await readHeadFile(join(await tempDir(), "head.json"), "s1")).toBeUndefined();
  });

  it("fails with DATA_LOSS, carrying the parse error, when the file is not JSON", async () => {
    const path = await headFileWith('{"format":2,"head":{');
    const error = await rejection(readHeadFile(path, "s1"));
    expect(error).toMatchObject({
      status: "DATA_LOSS",
      message: `session head file ${path} is not a valid agentd session head; restore it from a backup`,
    });
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("fails with DATA_LOSS without a cause when the file is JSON null", async () => {
    const error = await rejection(readHeadFile(await headFileWith("null"), "s1"));
    expect(error).toMatchObject({ status: "DATA_LOSS" });
    expect("cause" in error).toBe(false);
  });

  it("fails with DATA_LOSS without a cause when the file holds a head of another store format", async () => {
    const error = await rejection(
      readHeadFile(await headFileWith(JSON.stringify({ format: 1, head: head("s1") })), "s1"),
    );
    expect(error).toMatchObject({ status: "DATA_LOSS" });
    expect("cause" in error).toBe(false);
  });

  it("fails with DATA_LOSS when the head is null", async () => {
    const error = await rejection(readHeadFile(await headFileWith('{"format":2,"head":null}'), "s1"));
    expect(error).toMatchObject({ status: "DATA_LOSS" });
  });

  it("fails with DATA_LOSS when the head has no integer version", async () => {
    const { version: _, ...unversioned } = head("s1");
    for (const stored of [unversioned, { ...head("s1"), version: 1.5 }]) {
      const error = await rejection(
        readHeadFile(await headFileWith(JSON.stringify({ format: 2, head: stored })), "s1"),
      );
      expect(error).toMatchObject({ status: "DATA_LOSS" });
    }
  });

  it("fails with DATA_LOSS when the head has no session ID", async () => {
    const { sessionId: _, ...anonymous } = head("s1");
    const path = await headFileWith(JSON.stringify({ format: 2, head: anonymous }));
    await expect(readHeadFile(path, "s1")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: `session head file ${path} is not a valid agentd session head; restore it from a backup`,
    });
  });

  it("fails with DATA_LOSS naming both sessions when the file holds another session's head", async () => {
    const path = await headFileWith(JSON.stringify({ format: 2, head: head("s2") }));
    await expect(readHeadFile(path, "s1")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: `session head file ${path} holds session "s2", not "s1"`,
    });
  });

  it("resolves to a deep-frozen head", async () => {
    const path = await headFileWith(JSON.stringify({ format: 2, head: { ...head("s1"), labels: { team: "a" } } }));
    const read = (await readHeadFile(path, "s1"))!;
    expect(Object.isFrozen(read)).toBe(true);
    expect(Object.isFrozen(read.labels)).toBe(true);
  });
});

describe("readHeadFileOfKey", () => {
  it("reads the head of the session whose key it is given", async () => {
    const path = await headFileWith(JSON.stringify({ format: 2, head: head("s1") }));
    expect(await readHeadFileOfKey(path, sessionKey("s1"))).toEqual(head("s1"));
  });

  it("fails with DATA_LOSS naming the stored session and the key when the head is of another key", async () => {
    const path = await headFileWith(JSON.stringify({ format: 2, head: head("s2") }));
    const key = sessionKey("s1");
    await expect(readHeadFileOfKey(path, key)).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: `session head file ${path} holds session "s2", whose key is not ${key}`,
    });
  });

  it("resolves to undefined when the file does not exist", async () => {
    expect(await readHeadFileOfKey(join(await tempDir(), "head.json"), sessionKey("s1"))).toBeUndefined();
  });
});
