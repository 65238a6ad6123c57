import { AgentError } from "../../src/errors/agent-error.js";
import { deepFreeze } from "../ledger/frozen-value.js";
import { STORE_FORMAT_VERSION, type SessionHead } from "../snapshot-store.js";
import { writeFileAtomically } from "./atomic-write.js";
import { readSmallTextIfExists, readTextIfExists } from "./read-text.js";
import { sessionKey } from "./store-layout.js";

/**
 * Reads a session head file (`{"format":2,"head":{…}}`). Undefined when it
 * does not exist; DATA_LOSS when it is not a valid head of `sessionId` (the
 * file name is a hash of the ID, so the stored ID is checked too). The head is
 * deep-frozen.
 */
export async function readHeadFile(path: string, sessionId: string): Promise<SessionHead | undefined> {
  // One session's head: read synchronously (a small file; cheaper than a thread-pool round trip).
  return parseHead(path, readSmallTextIfExists(path), (stored) =>
    stored === sessionId ? undefined : `holds session ${JSON.stringify(stored)}, not ${JSON.stringify(sessionId)}`,
  );
}

/**
 * Reads the head file of the session whose key (`sessionKey`) is `key`,
 * without knowing its ID (listing, sweeping). As {@link readHeadFile}:
 * undefined when missing, DATA_LOSS when invalid or of another key.
 */
export async function readHeadFileOfKey(path: string, key: string): Promise<SessionHead | undefined> {
  // Listing and sweeping read every head: on the thread pool, so many heads never block the event loop.
  return parseHead(path, await readTextIfExists(path), (stored) =>
    sessionKey(stored) === key ? undefined : `holds session ${JSON.stringify(stored)}, whose key is not ${key}`,
  );
}

function parseHead(
  path: string,
  text: string | undefined,
  mismatch: (storedSessionId: string) => string | undefined,
): SessionHead | undefined {
  if (text === undefined) return undefined;
  let head: SessionHead | undefined;
  let cause: unknown;
  try {
    const parsed = JSON.parse(text) as { format?: unknown; head?: SessionHead };
    if (parsed?.format === STORE_FORMAT_VERSION) head = parsed.head;
  } catch (err) {
    cause = err;
  }
  if (!head || typeof head !== "object" || !Number.isInteger(head.version) || typeof head.sessionId !== "string") {
    throw new AgentError(
      "DATA_LOSS",
      `session head file ${path} is not a valid agentd session head; restore it from a backup`,
      {
        ...(cause !== undefined ? { cause } : {}),
      },
    );
  }
  const wrong = mismatch(head.sessionId);
  if (wrong !== undefined) throw new AgentError("DATA_LOSS", `session head file ${path} ${wrong}`);
  return deepFreeze(head);
}

/**
 * Replaces the head file atomically (temp file, optional fsync, rename):
 * readers in any process see the previous head or this one. Resolves to the
 * head as stored (parsed back from what was written, deep-frozen).
 */
export async function writeHeadFile(path: string, head: SessionHead, fsync: boolean): Promise<SessionHead> {
  const text = JSON.stringify({ format: STORE_FORMAT_VERSION, head });
  await writeFileAtomically(path, text, { fsync });
  return deepFreeze((JSON.parse(text) as { head: SessionHead }).head);
}
