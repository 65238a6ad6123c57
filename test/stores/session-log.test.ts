import {
  closeSync,
  fstatSync,
  ftruncateSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  encodeLogLine,
  isIntactPayload,
  MAX_HEADER_BYTES,
  parseLogLineHeader,
  type EncodedLogLine,
} from "../../stores/file/log-line.js";
import { readAt, readTailHead, SessionLogView, type LoggedRecord } from "../../stores/file/session-log.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

// The session log of the file store (stores/file/log-line.ts, stores/file/session-log.ts): one
// line per record version (R) or head (H), appended in batches that end with their H line. A
// reader sees a batch once its H line is intact, stops at a torn tail, and refuses (DATA_LOSS) a
// log garbled before later complete batches.

const TAIL_BYTES = 16 * 1024;

let dir: string;
const openFds: number[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "agentd-session-log-"));
});

afterEach(() => {
  for (const fd of openFds.splice(0)) closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

/** A session head of `version` (other fields fixed, `extra` merged in). */
function sessionHead(version: number, extra: Partial<SessionHead> = {}): SessionHead {
  return {
    sessionId: "s1",
    agent: "a",
    owner: "",
    headSnapshotId: "r1",
    turnCount: version,
    version,
    createdAt: 1,
    updatedAt: version,
    ...extra,
  };
}

/** The R line of version `version` of record `id`. */
function recordLine(id: string, version = 1, status: string = "completed", createdAt = 1000): EncodedLogLine {
  return encodeLogLine(
    { kind: "R", id, version, status, createdAt },
    JSON.stringify({ snapshotId: id, version, status, createdAt }),
  );
}

/** The H line holding `head`. */
function headLine(head: SessionHead): EncodedLogLine {
  return encodeLogLine({ kind: "H", id: "-", version: head.version, status: "-", createdAt: 0 }, JSON.stringify(head));
}

/** An H line whose (intact) payload is `payload`, whatever it holds. */
function rawHeadLine(payload: string): EncodedLogLine {
  return encodeLogLine({ kind: "H", id: "-", version: 1, status: "-", createdAt: 0 }, payload);
}

/** A batch: its R lines, then the H line with `head`. */
function batch(records: EncodedLogLine[], head: SessionHead): EncodedLogLine[] {
  return [...records, headLine(head)];
}

/** The bytes of `lines`, one after the other. */
function bytesOf(lines: readonly EncodedLogLine[]): Buffer {
  return Buffer.concat(lines.map((line) => line.bytes));
}

/** Writes `content` to a new file in the temporary directory and opens it for reading and writing. */
function openLog(content: Buffer, name = "s1.log"): { path: string; fd: number } {
  const path = join(dir, name);
  writeFileSync(path, content);
  const fd = openSync(path, "r+");
  openFds.push(fd);
  return { path, fd };
}

/** Refreshes `view` from `fd` with the file's current inode and size. */
function refreshFrom(view: SessionLogView, fd: number): void {
  const { ino, size } = fstatSync(fd);
  view.refresh(fd, ino, size);
}

/** A view of the log at `path`, refreshed from `fd`. */
function viewOf(path: string, fd: number): SessionLogView {
  const view = new SessionLogView(path);
  refreshFrom(view, fd);
  return view;
}

/** `content` with the byte at `at` changed (to another printable byte, never a newline). */
function withByteChanged(content: Buffer, at: number): Buffer {
  const copy = Buffer.from(content);
  copy[at] = copy[at] === 0x41 ? 0x42 : 0x41;
  return copy;
}

/** Changes the byte at `at` of the open file `fd` in place (to another printable byte). */
function changeByteInFile(fd: number, at: number): void {
  const old = readAt(fd, at, 1)[0];
  writeSync(fd, Buffer.of(old === 0x41 ? 0x42 : 0x41), 0, 1, at);
}

/** Offset of the first payload byte of `lines[index]` in `bytesOf(lines)`. */
function payloadOffset(lines: readonly EncodedLogLine[], index: number): number {
  return bytesOf(lines.slice(0, index)).length + lines[index]!.header.headerBytes;
}

/** The line `make(pad)` that is exactly `bytes` bytes long, for the right pad (a payload's padding length). */
function lineOfSize(bytes: number, make: (pad: number) => EncodedLogLine): EncodedLogLine {
  let pad = 0;
  for (let attempt = 0; attempt < 8; attempt++) {
    const line = make(pad);
    if (line.bytes.length === bytes) return line;
    pad = Math.max(0, pad + bytes - line.bytes.length);
  }
  throw new Error(`cannot pad a line to exactly ${bytes} bytes`);
}

/** The record IDs of `view`, in its order. */
function idsOf(view: SessionLogView): string[] {
  return [...view.records.keys()];
}

/** The payload of record `id` of `view` as JSON. */
function payloadOf(view: SessionLogView, fd: number, id: string): unknown {
  return JSON.parse(view.readPayload(fd, view.records.get(id)!).toString("utf8"));
}

describe("encodeLogLine", () => {
  it("writes kind, CRC-32 (8 hex digits), payload bytes, ID, version, status and createdAt before the payload and a newline", () => {
    // "123456789" is the CRC-32 check string: its CRC is cbf43926.
    const line = encodeLogLine(
      { kind: "R", id: "r1", version: 2, status: "completed", createdAt: 1700000000000 },
      "123456789",
    );
    expect(line.bytes.toString("latin1")).toBe("R cbf43926 9 r1 2 completed 1700000000000 123456789\n");
    expect(line.header).toEqual({
      kind: "R",
      id: "r1",
      version: 2,
      status: "completed",
      createdAt: 1700000000000,
      crc: 0xcbf43926,
      length: 9,
      headerBytes: "R cbf43926 9 r1 2 completed 1700000000000 ".length,
    });
  });

  it("returns the header that parseLogLineHeader reads back from its bytes", () => {
    const line = recordLine("r1", 3, "pending", 1234.5);
    expect(parseLogLineHeader(line.bytes)).toEqual(line.header);
    const head = headLine(sessionHead(7));
    expect(parseLogLineHeader(head.bytes)).toEqual(head.header);
    expect(head.header).toMatchObject({ kind: "H", id: "-", version: 7, status: "-", createdAt: 0 });
  });

  it("counts the payload length in UTF-8 bytes, not characters", () => {
    const payload = JSON.stringify({ snapshotId: "r1", text: "héllo € 😀" });
    const line = encodeLogLine({ kind: "R", id: "r1", version: 1, status: "completed", createdAt: 1 }, payload);
    expect(line.header.length).toBe(Buffer.byteLength(payload, "utf8"));
    expect(line.header.length).toBeGreaterThan(payload.length);
    const header = parseLogLineHeader(line.bytes)!;
    expect(header.length).toBe(line.header.length);
    const rest = line.bytes.subarray(header.headerBytes);
    expect(isIntactPayload(header, rest)).toBe(true);
    expect(rest.subarray(0, header.length).toString("utf8")).toBe(payload);
  });

  it("pads a CRC below 0x10000000 to eight hex digits, so the line still parses", () => {
    let payload = "0";
    for (let i = 0; crc32(payload) >= 0x10000000; i++) payload = String(i);
    const line = encodeLogLine({ kind: "R", id: "r1", version: 1, status: "completed", createdAt: 1 }, payload);
    expect(line.bytes.toString("latin1", 2, 10)).toBe(crc32(payload).toString(16).padStart(8, "0"));
    expect(line.bytes.toString("latin1", 2, 3)).toBe("0");
    expect(parseLogLineHeader(line.bytes)?.crc).toBe(crc32(payload));
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    "refuses createdAt %s with INVALID_ARGUMENT",
    (createdAt) => {
      expectThrowsAgentError(
        () => encodeLogLine({ kind: "R", id: "r1", version: 1, status: "completed", createdAt }, "{}"),
        "INVALID_ARGUMENT",
        /snapshot r1: createdAt must be a finite number/,
      );
    },
  );

  it.each([-1, 1.5, Number.NaN])("refuses version %s (not a non-negative integer) with INVALID_ARGUMENT", (version) => {
    expectThrowsAgentError(
      () => encodeLogLine({ kind: "R", id: "r1", version, status: "completed", createdAt: 1 }, "{}"),
      "INVALID_ARGUMENT",
      /the version a non-negative integer/,
    );
  });

  it("accepts version 0", () => {
    expect(encodeLogLine({ kind: "H", id: "-", version: 0, status: "-", createdAt: 0 }, "{}").header.version).toBe(0);
  });
});

describe("parseLogLineHeader", () => {
  it.each([
    ["an empty buffer", ""],
    ["text that is not a header", "hello world\n"],
    ["an unknown kind", "X cbf43926 9 r1 2 completed 1 123456789\n"],
    ["a CRC of fewer than 8 hex digits", "R cbf4392 9 r1 2 completed 1 123456789\n"],
    ["an upper-case CRC", "R CBF43926 9 r1 2 completed 1 123456789\n"],
    ["a missing field", "R cbf43926 9 r1 completed 1 123456789\n"],
    ["a leading space", " R cbf43926 9 r1 2 completed 1 123456789\n"],
    ["an ID starting with a dot", "R cbf43926 9 .r1 2 completed 1 123456789\n"],
    ["a header without the space before the payload", "R cbf43926 9 r1 2 completed 1"],
  ])("returns undefined for %s", (_what, text) => {
    expect(parseLogLineHeader(Buffer.from(text, "latin1"))).toBeUndefined();
  });

  it.each(["Completed", "pend1ng", "a".repeat(17), "--"])("rejects the status token %j", (status) => {
    expect(parseLogLineHeader(Buffer.from(`R cbf43926 9 r1 2 ${status} 1 123456789\n`, "latin1"))).toBeUndefined();
  });

  it.each(["1e999", "-1e999", "--1", ".", "1e5e5", "e"])(
    "rejects the createdAt %j (not a finite number)",
    (createdAt) => {
      expect(
        parseLogLineHeader(Buffer.from(`R cbf43926 9 r1 2 completed ${createdAt} 123456789\n`, "latin1")),
      ).toBeUndefined();
    },
  );

  it("reads the longest header it allows (a 200-character ID, widest fields) within MAX_HEADER_BYTES", () => {
    const id = "r".repeat(200);
    const text = `R ffffffff 999999999999999 ${id} 999999999999999 ${"a".repeat(16)} ${"1".repeat(32)} {}\n`;
    const header = parseLogLineHeader(Buffer.from(text, "latin1"));
    expect(header).toMatchObject({ kind: "R", id, length: 999999999999999, version: 999999999999999 });
    expect(header!.headerBytes).toBeLessThanOrEqual(MAX_HEADER_BYTES);
  });

  it("rejects an ID longer than 200 characters", () => {
    const text = `R cbf43926 9 ${"r".repeat(201)} 2 completed 1 123456789\n`;
    expect(parseLogLineHeader(Buffer.from(text, "latin1"))).toBeUndefined();
  });
});

describe("isIntactPayload", () => {
  const line = recordLine("r1");
  const { header } = line;
  const rest = line.bytes.subarray(header.headerBytes);

  it("is true for the payload and newline its header describes", () => {
    expect(isIntactPayload(header, rest)).toBe(true);
  });

  it("is false when a payload byte has changed", () => {
    expect(isIntactPayload(header, withByteChanged(rest, 3))).toBe(false);
  });

  it("is false when the final newline is missing", () => {
    expect(isIntactPayload(header, rest.subarray(0, header.length))).toBe(false);
  });

  it("is false when the byte after the payload is not a newline", () => {
    const noNewline = Buffer.from(rest);
    noNewline[header.length] = 0x20;
    expect(isIntactPayload(header, noNewline)).toBe(false);
  });

  it("is false when the header's length is not the payload's", () => {
    expect(isIntactPayload({ ...header, length: header.length + 1 }, rest)).toBe(false);
    expect(isIntactPayload({ ...header, length: header.length - 1 }, rest)).toBe(false);
  });

  it("is false for a line longer than the payload and its newline", () => {
    expect(isIntactPayload(header, Buffer.concat([rest, Buffer.from("R")]))).toBe(false);
  });
});

describe("readAt", () => {
  it("reads the bytes at an offset, fewer only at the end of the file", () => {
    const { fd } = openLog(Buffer.from("0123456789"));
    expect(readAt(fd, 2, 3).toString()).toBe("234");
    expect(readAt(fd, 6, 100).toString()).toBe("6789");
    expect(readAt(fd, 10, 5).length).toBe(0);
  });
});

describe("SessionLogView.refresh", () => {
  it("sees nothing in an empty log", () => {
    const { path, fd } = openLog(Buffer.alloc(0));
    const view = viewOf(path, fd);
    expect(view.head).toBeUndefined();
    expect(view.records.size).toBe(0);
    expect(view.validEnd).toBe(0);
    expect(view.lastBatchStart).toBe(0);
  });

  it("lists the records of every batch in the order of their first commit, with their header fields", () => {
    const lines = [
      ...batch([recordLine("r1", 1, "completed", 30), recordLine("r2", 1, "pending", 10)], sessionHead(1)),
      ...batch([recordLine("r0", 1, "failed", 20)], sessionHead(2)),
    ];
    const { path, fd } = openLog(bytesOf(lines));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1", "r2", "r0"]);
    expect(view.records.get("r2")).toMatchObject({ version: 1, status: "pending", createdAt: 10 });
    expect(view.records.get("r0")).toMatchObject({ version: 1, status: "failed", createdAt: 20 });
    expect(view.records.get("r2")!.offset).toBe(payloadOffset(lines, 1));
    expect(payloadOf(view, fd, "r0")).toEqual({ snapshotId: "r0", version: 1, status: "failed", createdAt: 20 });
  });

  it("lets a later R line of the same ID (an update) replace its version and status while keeping its place", () => {
    const lines = [
      ...batch([recordLine("r1", 1, "pending", 5), recordLine("r2", 1, "pending", 6)], sessionHead(1)),
      ...batch([recordLine("r1", 2, "completed", 5)], sessionHead(2)),
    ];
    const { path, fd } = openLog(bytesOf(lines));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1", "r2"]);
    expect(view.records.get("r1")).toMatchObject({ version: 2, status: "completed", createdAt: 5 });
    expect(view.records.get("r1")!.offset).toBe(payloadOffset(lines, 3));
    expect(payloadOf(view, fd, "r1")).toMatchObject({ version: 2, status: "completed" });
  });

  it("takes the head from the last complete batch", () => {
    const last = sessionHead(3, { headSnapshotId: "r3", labels: { team: "x" } });
    const lines = [
      ...batch([recordLine("r1")], sessionHead(1)),
      ...batch([recordLine("r2")], sessionHead(2)),
      ...batch([recordLine("r3")], last),
    ];
    const { path, fd } = openLog(bytesOf(lines));
    expect(viewOf(path, fd).head).toEqual(last);
  });

  it("deep-freezes the head it reads", () => {
    const { path, fd } = openLog(bytesOf(batch([recordLine("r1")], sessionHead(1, { labels: { team: "x" } }))));
    const view = viewOf(path, fd);
    expect(Object.isFrozen(view.head)).toBe(true);
    expect(Object.isFrozen(view.head!.labels)).toBe(true);
  });

  it("puts validEnd after the last complete batch and lastBatchStart at that batch's first line", () => {
    const first = batch([recordLine("r1"), recordLine("r2")], sessionHead(1));
    const second = batch([recordLine("r3")], sessionHead(2));
    const { path, fd } = openLog(bytesOf([...first, ...second]));
    const view = viewOf(path, fd);
    expect(view.lastBatchStart).toBe(bytesOf(first).length);
    expect(view.validEnd).toBe(bytesOf([...first, ...second]).length);
  });

  it("reads an H line with no R lines before it as a batch of its own", () => {
    const first = batch([recordLine("r1")], sessionHead(1));
    const { path, fd } = openLog(bytesOf([...first, headLine(sessionHead(2, { headSnapshotId: "r0" }))]));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1"]);
    expect(view.head).toEqual(sessionHead(2, { headSnapshotId: "r0" }));
    expect(view.lastBatchStart).toBe(bytesOf(first).length);
  });

  it("accepts each record status: pending, completed, failed, aborted and expired", () => {
    const statuses: SnapshotStatus[] = ["pending", "completed", "failed", "aborted", "expired"];
    const { path, fd } = openLog(
      bytesOf(
        batch(
          statuses.map((status) => recordLine(`r-${status}`, 1, status)),
          sessionHead(1),
        ),
      ),
    );
    const view = viewOf(path, fd);
    expect([...view.records.values()].map((record) => record.status)).toEqual(statuses);
  });

  it("lists records without checking their payloads (readPayload and lastBatchIntact do)", () => {
    const lines = [...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], sessionHead(2))];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 0) + 2));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1", "r2"]);
  });

  it("adds the batches appended since the last refresh", () => {
    const first = batch([recordLine("r1", 1, "pending")], sessionHead(1));
    const { path, fd } = openLog(bytesOf(first));
    const view = viewOf(path, fd);
    const second = [
      ...batch([recordLine("r1", 2, "completed"), recordLine("r2")], sessionHead(2)),
      ...batch([recordLine("r3")], sessionHead(3)),
    ];
    writeSync(fd, bytesOf(second), 0, bytesOf(second).length, view.validEnd);
    refreshFrom(view, fd);
    expect(idsOf(view)).toEqual(["r1", "r2", "r3"]);
    expect(view.records.get("r1")).toMatchObject({ version: 2, status: "completed" });
    expect(view.head).toEqual(sessionHead(3));
    expect(view.validEnd).toBe(bytesOf([...first, ...second]).length);
    expect(view.lastBatchStart).toBe(bytesOf([...first, ...second.slice(0, 3)]).length);
  });

  it("does not read again the batches it has already read", () => {
    const first = batch([recordLine("r1")], sessionHead(1));
    const { path, fd } = openLog(bytesOf(first));
    const view = viewOf(path, fd);
    // Garbling the first batch's H line now would be DATA_LOSS for a reader starting from byte 0.
    changeByteInFile(fd, payloadOffset(first, 1) + 2);
    const second = bytesOf(batch([recordLine("r2")], sessionHead(2)));
    writeSync(fd, second, 0, second.length, view.validEnd);
    refreshFrom(view, fd);
    expect(idsOf(view)).toEqual(["r1", "r2"]);
    expect(() => viewOf(path, fd)).toThrow(/garbled/);
  });

  it("does not see R lines until the H line of their batch is written", () => {
    const first = batch([recordLine("r1")], sessionHead(1));
    const { path, fd } = openLog(bytesOf([...first, recordLine("r2")]));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1"]);
    expect(view.head).toEqual(sessionHead(1));
    expect(view.validEnd).toBe(bytesOf(first).length);

    const head = headLine(sessionHead(2)).bytes;
    writeSync(fd, head, 0, head.length, fstatSync(fd).size);
    refreshFrom(view, fd);
    expect(idsOf(view)).toEqual(["r1", "r2"]);
    expect(view.head).toEqual(sessionHead(2));
  });

  it("stops before a last batch cut short anywhere, without an error", () => {
    const first = bytesOf(batch([recordLine("r1")], sessionHead(1)));
    const full = Buffer.concat([first, bytesOf(batch([recordLine("r2"), recordLine("r1", 2)], sessionHead(2)))]);
    const { path, fd } = openLog(full);
    for (let size = full.length - 1; size > first.length; size--) {
      ftruncateSync(fd, size);
      const view = viewOf(path, fd);
      expect({ size, ids: idsOf(view), validEnd: view.validEnd, head: view.head }).toEqual({
        size,
        ids: ["r1"],
        validEnd: first.length,
        head: sessionHead(1),
      });
      expect(view.records.get("r1")!.version).toBe(1);
    }
  });

  it("stops before a last batch whose H line is garbled, without an error", () => {
    const first = batch([recordLine("r1")], sessionHead(1));
    const lines = [...first, ...batch([recordLine("r2")], sessionHead(2))];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 3) + 5));
    const view = viewOf(path, fd);
    expect(idsOf(view)).toEqual(["r1"]);
    expect(view.head).toEqual(sessionHead(1));
    expect(view.validEnd).toBe(bytesOf(first).length);
  });

  it("treats an R line of an unknown status as garbled: DATA_LOSS when its batch's intact H line follows", () => {
    const first = batch([recordLine("r1")], sessionHead(1));
    const { path, fd } = openLog(bytesOf([...first, ...batch([recordLine("r2", 1, "done")], sessionHead(2))]));
    expectThrowsAgentError(
      () => viewOf(path, fd),
      "DATA_LOSS",
      `session log ${path} is garbled at byte ${bytesOf(first).length}`,
    );
  });

  it("starts over when the log was replaced by another file (another inode)", () => {
    const { path, fd } = openLog(bytesOf(batch([recordLine("r1"), recordLine("r2")], sessionHead(4))));
    const view = viewOf(path, fd);
    const replacement = bytesOf([
      ...batch([recordLine("x1")], sessionHead(1, { headSnapshotId: "x1" })),
      ...batch([recordLine("x2"), recordLine("x3")], sessionHead(2, { headSnapshotId: "x3" })),
    ]);
    expect(replacement.length).toBeGreaterThan(view.validEnd);
    const { path: newPath } = openLog(replacement, "s1.log.new");
    renameSync(newPath, path);
    const newFd = openSync(path, "r");
    openFds.push(newFd);
    expect(fstatSync(newFd).ino).not.toBe(fstatSync(fd).ino);
    refreshFrom(view, newFd);
    expect(idsOf(view)).toEqual(["x1", "x2", "x3"]);
    expect(view.head).toEqual(sessionHead(2, { headSnapshotId: "x3" }));
    expect(view.validEnd).toBe(replacement.length);
  });

  it("starts over when the log is shorter than what it had read", () => {
    const { path, fd } = openLog(
      bytesOf([...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], sessionHead(2))]),
    );
    const view = viewOf(path, fd);
    const shorter = bytesOf(batch([recordLine("x1")], sessionHead(1, { headSnapshotId: "x1" })));
    ftruncateSync(fd, 0);
    writeSync(fd, shorter, 0, shorter.length, 0);
    refreshFrom(view, fd);
    expect(idsOf(view)).toEqual(["x1"]);
    expect(view.head).toEqual(sessionHead(1, { headSnapshotId: "x1" }));
    expect(view.validEnd).toBe(shorter.length);
    expect(view.lastBatchStart).toBe(0);
  });

  it("throws DATA_LOSS, naming the log and asking for a backup, when a batch before later complete batches is garbled", () => {
    const lines = [
      ...batch([recordLine("r1")], sessionHead(1)),
      ...batch([recordLine("r2")], sessionHead(2)),
      ...batch([recordLine("r3")], sessionHead(3)),
    ];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 1) + 5));
    const error = expectThrowsAgentError(() => viewOf(path, fd), "DATA_LOSS", "restore it from a backup");
    expect(error.message).toContain(`session log ${path} is garbled at byte 0`);
  });

  it("throws DATA_LOSS when a later batch lies more than 64 KiB past the garbled one", () => {
    const big = (id: string): EncodedLogLine =>
      encodeLogLine(
        { kind: "R", id, version: 1, status: "completed", createdAt: 1 },
        JSON.stringify({ snapshotId: id, text: "y".repeat(70 * 1024) }),
      );
    const lines = [
      ...batch([recordLine("r1")], sessionHead(1)),
      ...batch([big("r2"), big("r3")], sessionHead(2, { labels: { note: "z".repeat(70 * 1024) } })),
    ];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 1) + 5));
    expectThrowsAgentError(() => viewOf(path, fd), "DATA_LOSS", `session log ${path} is garbled at byte 0`);
  });

  it.each([65534, 65535, 65536, 65537])(
    "throws DATA_LOSS when the later batch's H line starts at byte %i, across the 64 KiB read boundary",
    (headStart) => {
      const first = batch([recordLine("r1")], sessionHead(1));
      const padded = lineOfSize(headStart - bytesOf(first).length, (pad) =>
        encodeLogLine(
          { kind: "R", id: "r2", version: 1, status: "completed", createdAt: 1 },
          JSON.stringify({ snapshotId: "r2", text: "y".repeat(pad) }),
        ),
      );
      const lines = [...first, ...batch([padded], sessionHead(2))];
      expect(payloadOffset(lines, 3) - lines[3]!.header.headerBytes).toBe(headStart);
      const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 1) + 5));
      expectThrowsAgentError(() => viewOf(path, fd), "DATA_LOSS", `session log ${path} is garbled at byte 0`);
    },
  );

  it.each([
    ["null", "null"],
    ["an empty object", "{}"],
    ["an array", "[]"],
    ["a head without an integer version", JSON.stringify({ ...sessionHead(1), version: "1" })],
    ["a head without a session ID", JSON.stringify({ ...sessionHead(1), sessionId: 1 })],
  ])("throws DATA_LOSS when an intact H line holds %s", (_what, payload) => {
    const { path, fd } = openLog(bytesOf([recordLine("r1"), rawHeadLine(payload)]));
    expectThrowsAgentError(
      () => viewOf(path, fd),
      "DATA_LOSS",
      `session log ${path} holds a head that is not a valid agentd session head; restore it from a backup`,
    );
  });

  it("throws DATA_LOSS, with the parse error as its cause, when an intact H line holds text that is not JSON", () => {
    const { path, fd } = openLog(bytesOf([recordLine("r1"), rawHeadLine("{not json")]));
    const error = expectThrowsAgentError(() => viewOf(path, fd), "DATA_LOSS", "not a valid agentd session head");
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });
});

describe("readTailHead", () => {
  /** readTailHead of the file with `content`. */
  function tailHeadOf(content: Buffer): SessionHead | undefined {
    const { path, fd } = openLog(content);
    return readTailHead(fd, fstatSync(fd).size, path);
  }

  it("returns the head when the last line is an intact H line", () => {
    const last = sessionHead(2, { headSnapshotId: "r2" });
    expect(
      tailHeadOf(bytesOf([...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], last)])),
    ).toEqual(last);
  });

  it("returns undefined for an empty file", () => {
    expect(tailHeadOf(Buffer.alloc(0))).toBeUndefined();
  });

  it("returns undefined when the last line is cut short", () => {
    const full = bytesOf([...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], sessionHead(2))]);
    expect(tailHeadOf(full.subarray(0, full.length - 1))).toBeUndefined();
    expect(tailHeadOf(full.subarray(0, full.length - 20))).toBeUndefined();
  });

  it("returns undefined when the last line is an R line (a batch being written)", () => {
    expect(tailHeadOf(bytesOf([...batch([recordLine("r1")], sessionHead(1)), recordLine("r2")]))).toBeUndefined();
  });

  it("returns undefined when the last H line is garbled", () => {
    const lines = batch([recordLine("r1")], sessionHead(1));
    expect(tailHeadOf(withByteChanged(bytesOf(lines), payloadOffset(lines, 1) + 3))).toBeUndefined();
  });

  it("reads only the last line: garbled lines before it do not matter", () => {
    const lines = [...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], sessionHead(2))];
    expect(tailHeadOf(withByteChanged(bytesOf(lines), payloadOffset(lines, 1) + 3))).toEqual(sessionHead(2));
  });

  it("returns the head of a last line just shorter than the 16 KiB it reads", () => {
    const line = lineOfSize(TAIL_BYTES - 1, (pad) => headLine(sessionHead(2, { labels: { note: "p".repeat(pad) } })));
    const head: unknown = JSON.parse(line.bytes.toString("utf8", line.header.headerBytes));
    expect(tailHeadOf(bytesOf([...batch([recordLine("r1")], sessionHead(1)), recordLine("r2"), line]))).toEqual(head);
  });

  it("returns undefined for a head line longer than the 16 KiB it reads (a scan still reads that head)", () => {
    const long = sessionHead(2, { labels: { note: "n".repeat(20 * 1024) } });
    const content = bytesOf([...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], long)]);
    expect(tailHeadOf(content)).toBeUndefined();
    const { path, fd } = openLog(content, "scanned.log");
    expect(viewOf(path, fd).head).toEqual(long);
  });

  it("does not take text inside a head line longer than 16 KiB for a line of its own", () => {
    // A label whose text, from where the 16 KiB read starts, looks like an intact H line (its
    // "payload" runs to the end of the real line).
    const fakeLine = (payloadBytes: number): string => {
      const payload = `${"m".repeat(payloadBytes - 3)}"}}`;
      return `H ${crc32(payload).toString(16).padStart(8, "0")} ${payload.length} - 1 - 0 ${payload}\n`;
    };
    let payloadBytes = TAIL_BYTES;
    while (fakeLine(payloadBytes).length > TAIL_BYTES) payloadBytes--;
    const fake = fakeLine(payloadBytes);
    const note = fake.slice(0, -'"}}\n'.length);
    const long = sessionHead(2, { labels: { note } });
    const content = bytesOf([...batch([recordLine("r1")], sessionHead(1)), headLine(long)]);
    expect(content.subarray(content.length - TAIL_BYTES).toString("latin1")).toBe(fake);
    expect(tailHeadOf(content)).toBeUndefined();
  });

  it("returns undefined for a log of a single head line longer than 16 KiB", () => {
    expect(
      tailHeadOf(bytesOf([headLine(sessionHead(1, { labels: { note: "n".repeat(20 * 1024) } }))])),
    ).toBeUndefined();
  });

  it.each(["null", "{}"])("throws DATA_LOSS when the last line is an intact H line holding %s", (payload) => {
    const { path, fd } = openLog(bytesOf([recordLine("r1"), rawHeadLine(payload)]));
    expectThrowsAgentError(() => readTailHead(fd, fstatSync(fd).size, path), "DATA_LOSS", path);
  });
});

describe("SessionLogView.applyAppended", () => {
  /** The state of `view` that a reader relies on. */
  function stateOf(view: SessionLogView): {
    records: [string, LoggedRecord][];
    head: SessionHead | undefined;
    validEnd: number;
    lastBatchStart: number;
  } {
    return {
      records: [...view.records.entries()],
      head: view.head,
      validEnd: view.validEnd,
      lastBatchStart: view.lastBatchStart,
    };
  }

  it("leaves the view as a fresh view of the file sees it, after the batch is written at validEnd", () => {
    const { path, fd } = openLog(bytesOf(batch([recordLine("r1", 1, "pending"), recordLine("r2")], sessionHead(1))));
    const view = viewOf(path, fd);
    const head = sessionHead(2, { headSnapshotId: "r3" });
    const appended = batch([recordLine("r1", 2, "completed"), recordLine("r3", 1, "pending", 77)], head);
    const bytes = bytesOf(appended);
    writeSync(fd, bytes, 0, bytes.length, view.validEnd);
    view.applyAppended(appended, head);

    const fresh = viewOf(path, fd);
    expect(stateOf(view)).toEqual(stateOf(fresh));
    expect(idsOf(view)).toEqual(["r1", "r2", "r3"]);
    expect(view.validEnd).toBe(readFileSync(path).length);
  });

  it("records where the appended payloads lie, so readPayload reads them", () => {
    const { path, fd } = openLog(bytesOf(batch([recordLine("r1")], sessionHead(1))));
    const view = viewOf(path, fd);
    const appended = batch([recordLine("r2", 1, "aborted", 9)], sessionHead(2));
    const bytes = bytesOf(appended);
    writeSync(fd, bytes, 0, bytes.length, view.validEnd);
    view.applyAppended(appended, sessionHead(2));
    expect(payloadOf(view, fd, "r2")).toEqual({ snapshotId: "r2", version: 1, status: "aborted", createdAt: 9 });
  });

  it("lets the next refresh read on from the end of the applied batch", () => {
    const { path, fd } = openLog(bytesOf(batch([recordLine("r1")], sessionHead(1))));
    const view = viewOf(path, fd);
    const mine = batch([recordLine("r2")], sessionHead(2));
    writeSync(fd, bytesOf(mine), 0, bytesOf(mine).length, view.validEnd);
    view.applyAppended(mine, sessionHead(2));
    const theirs = bytesOf(batch([recordLine("r3")], sessionHead(3)));
    writeSync(fd, theirs, 0, theirs.length, view.validEnd);
    refreshFrom(view, fd);
    expect(idsOf(view)).toEqual(["r1", "r2", "r3"]);
    expect(view.head).toEqual(sessionHead(3));
    expect(stateOf(view)).toEqual(stateOf(viewOf(path, fd)));
  });
});

describe("SessionLogView.lastBatchIntact", () => {
  it("is true when every R line of the last batch is intact", () => {
    const { path, fd } = openLog(
      bytesOf([
        ...batch([recordLine("r1")], sessionHead(1)),
        ...batch([recordLine("r2"), recordLine("r3")], sessionHead(2)),
      ]),
    );
    expect(viewOf(path, fd).lastBatchIntact(fd)).toBe(true);
  });

  it("is false when an R payload of the last batch has a changed byte though its H line is intact", () => {
    const lines = [
      ...batch([recordLine("r1")], sessionHead(1)),
      ...batch([recordLine("r2"), recordLine("r3")], sessionHead(2)),
    ];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 3) + 4));
    const view = viewOf(path, fd);
    expect(view.head).toEqual(sessionHead(2));
    expect(view.lastBatchIntact(fd)).toBe(false);
  });

  it("does not look at the records of earlier batches", () => {
    const lines = [...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r2")], sessionHead(2))];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 0) + 4));
    expect(viewOf(path, fd).lastBatchIntact(fd)).toBe(true);
  });

  it("checks an updated record whose first commit was in an earlier batch", () => {
    const lines = [...batch([recordLine("r1")], sessionHead(1)), ...batch([recordLine("r1", 2)], sessionHead(2))];
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), payloadOffset(lines, 2) + 4));
    expect(viewOf(path, fd).lastBatchIntact(fd)).toBe(false);
  });
});

describe("SessionLogView.readPayload", () => {
  it("returns the payload bytes of a record", () => {
    const line = recordLine("r1", 1, "expired", 42);
    const { path, fd } = openLog(bytesOf(batch([line], sessionHead(1))));
    const view = viewOf(path, fd);
    expect(view.readPayload(fd, view.records.get("r1")!).toString("utf8")).toBe(
      line.bytes.subarray(line.header.headerBytes, line.bytes.length - 1).toString("utf8"),
    );
  });

  it("throws DATA_LOSS naming the log, the record and its offset when the payload is garbled", () => {
    const lines = batch([recordLine("r1"), recordLine("r2")], sessionHead(1));
    const offset = payloadOffset(lines, 1);
    const { path, fd } = openLog(withByteChanged(bytesOf(lines), offset + 3));
    const view = viewOf(path, fd);
    expectThrowsAgentError(
      () => view.readPayload(fd, view.records.get("r2")!),
      "DATA_LOSS",
      `session log ${path} holds a garbled record r2 at byte ${offset}; restore it from a backup`,
    );
    expect(payloadOf(view, fd, "r1")).toMatchObject({ snapshotId: "r1" });
  });
});
