import { execFile } from "node:child_process";
import { join } from "node:path";
import fastJsonPatch from "fast-json-patch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { jsonMessages } from "./readme-commands.js";

const GRPCURL = join(REPO_ROOT, ".tools/bin/grpcurl");
const PYTHON = join(REPO_ROOT, ".tools/venv/bin/python");

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd();
});
afterAll(async () => {
  await server?.stop();
});

/** Runs grpcurl with the request(s) on stdin (`-d @`) and parses its JSON output. */
function grpcurl(method: string, body: string): Promise<Record<string, any>[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      GRPCURL,
      ["-plaintext", "-d", "@", server.target, `agentd.v1.AgentService/${method}`],
      (err, stdout, stderr) =>
        err ? reject(new Error(`grpcurl ${method} failed: ${stderr}`)) : resolve(jsonMessages(stdout)),
    );
    child.stdin!.end(body);
  });
}

/** Applies each patch in turn with Python's `jsonpatch` (the Python client's dependency, in .tools/venv). */
function applyWithPythonJsonpatch(patches: unknown[][]): Promise<unknown> {
  const script = [
    "import json, sys, jsonpatch",
    "doc = None",
    "for ops in json.load(sys.stdin):",
    "    doc = jsonpatch.JsonPatch(ops).apply(doc)",
    "print(json.dumps(doc))",
  ].join("\n");
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ["-c", script], (err, stdout, stderr) =>
      err ? reject(new Error(`python jsonpatch failed: ${stderr}`)) : resolve(JSON.parse(stdout)),
    );
    child.stdin!.end(JSON.stringify(patches));
  });
}

describe("custom-state patches in proto JSON (grpcurl) apply with standard RFC 6902 libraries", () => {
  it("every operation carries a path (also the root replace), and Python jsonpatch and fast-json-patch rebuild GetSnapshot's custom state", async () => {
    const requests = ["buy milk", "walk dog", "done 1"].map((text, i) =>
      JSON.stringify({
        ...(i === 0 ? { init: { agent: "tasks" } } : {}),
        input: { message: { role: "ROLE_USER", content: [{ text }] } },
      }),
    );
    const responses = await grpcurl("Chat", requests.join("\n"));
    const patches = responses
      .filter((r) => r.chunk?.customPatch)
      .map((r) => r.chunk.customPatch as Record<string, unknown>[]);
    expect(patches.length).toBeGreaterThanOrEqual(3);
    for (const ops of patches) for (const op of ops) expect(op).toHaveProperty("path");
    expect(patches[0]![0]).toMatchObject({ op: "replace", path: "" });
    const output = responses.at(-1)!.output;

    const [snapshot] = await grpcurl("GetSnapshot", JSON.stringify({ agent: "tasks", sessionId: output.sessionId }));
    const custom = snapshot!.snapshot.state.custom;
    expect(custom).toEqual({
      tasks: [
        { id: 1, title: "buy milk", done: true },
        { id: 2, title: "walk dog", done: false },
      ],
      nextId: 3,
    });

    expect(await applyWithPythonJsonpatch(patches)).toEqual(custom);

    let doc: unknown = null;
    for (const ops of patches)
      doc = fastJsonPatch.applyPatch(doc, ops as unknown as fastJsonPatch.Operation[], true, false).newDocument;
    expect(doc).toEqual(custom);
  });
});
