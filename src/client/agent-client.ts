import { Code, createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import {
  agentInfoFromWire,
  agentInitToWire,
  agentOutputFromWire,
  inputAckFromWire,
  durationFromMs,
  sessionFromWire,
  snapshotFromWire,
  snapshotStatusFromWire,
} from "../protocol/index.js";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { SessionInfo } from "../types/session-info.js";
import type { AgentDescriptor, AgentInput, AgentOutput, InputAck } from "../types/agent-io.js";
import type { AgentInit } from "../types/session-state.js";
import { isTerminalStatus, type SessionSnapshot, type SnapshotStatus } from "../types/snapshot.js";
import { clientError, toClientError, chatNeedsHttp2, halfDuplexReason } from "./client-errors.js";
import { Conversation } from "./conversation.js";
import { encodeInput, normalizeInput, type ConversationInput } from "./conversation-input.js";
import { newRequestId } from "./request-id.js";
import { Retrier } from "./retrier.js";
import type { RetryOptions } from "./retry-policy.js";
import { chunkReplayResume, retryingStream } from "./retrying-stream.js";
import { StreamedRun } from "./streamed-run.js";

/** Which snapshot `getSnapshot` reads: one by ID, or a session's latest. */
export type SnapshotRef = { snapshotId: string; sessionId?: string } | { sessionId: string; snapshotId?: undefined };

/** Paging and shape of `listSnapshots`. */
export interface ListSnapshotsOptions {
  /** At most this many snapshots (server default 50, max 1000). */
  pageSize?: number;
  /** From a previous page's `nextPageToken`. */
  pageToken?: string;
  /** Include each snapshot's (transformed) state. */
  includeState?: boolean;
}

/** One page of a session's snapshots, newest first. */
export interface SnapshotPage {
  snapshots: SessionSnapshot[];
  /** Pass as `pageToken` for the next page; absent on the last page. */
  nextPageToken?: string;
}

/** Filters and paging of `listSessions`. */
export interface ListSessionsOptions {
  /** Only this agent's sessions. */
  agent?: string;
  /** Only sessions carrying each of these labels with exactly this value. */
  labels?: Record<string, string>;
  /** Only sessions updated after this time (epoch ms). */
  updatedAfter?: number;
  /** Sessions per request (server default 50, max 1000); the iterator fetches every page. */
  pageSize?: number;
}

/** What `updateSession` changes. */
export interface SessionUpdate {
  setLabels?: Record<string, string>;
  removeLabels?: string[];
  /** A new idle time-to-live in ms (counted from now); `null` removes it. */
  ttlMs?: number | null;
}

/**
 * A typed agentd client over any Connect `Transport`, speaking the plain
 * runtime types (`src/types/*`), never protobuf classes.
 *
 * Errors: every method rejects (or throws) with a `ConnectError` from
 * `@connectrpc/connect`; compare `err.code` with `Code` — e.g. `Code.NotFound`
 * for an unknown agent, session or snapshot, `Code.FailedPrecondition` for a
 * state sent to a server-managed agent or an ID sent to a client-managed one,
 * `Code.InvalidArgument` for a malformed request. In-band agent failures do
 * not reject: the output has `finishReason: "failed"` and `error`.
 *
 * Retries (on by default; `retry: false` turns them off): every input gets a
 * request ID (a UUID unless the input has `requestId`), and calls and streams
 * that fail with UNAVAILABLE or a broken connection, or end before their
 * output, are retried with the same request IDs (the server runs each once),
 * with jittered exponential backoff (100 ms doubling to 2 s) for up to 30 s
 * after the first failure (`maxElapsedMs`; counted afresh once a stream makes
 * progress), so a call rides out a restart, and always within the call's
 * `timeoutMs` and `signal`. Streams re-open (Attach after its last sequence); a conversation
 * reconnects (see {@link Conversation}). The caller's cancellation,
 * DEADLINE_EXCEEDED and every other status surface at once.
 */
export class AgentClient {
  /** The generated connect-es client, for calls this wrapper does not cover (not retried). */
  readonly rpc: Client<typeof AgentService>;
  private readonly retrier: Retrier;

  /** Wraps a transport (see `createAgentClient`, `createNodeTransport`, `createBrowserTransport`); `retry` as in {@link RetryOptions}. */
  constructor(transport: Transport, retry: RetryOptions = {}) {
    this.rpc = createClient(AgentService, transport);
    this.halfDuplex = halfDuplexReason(transport);
    this.retrier = new Retrier(retry);
  }

  /** Retries this client made so far (every call, stream and conversation reconnect). */
  get retryCount(): number {
    return this.retrier.retries;
  }

  /** How the transport falls short of a bidi stream (HTTP/1.1, fetch), when it does. */
  private readonly halfDuplex: string | undefined;

  /**
   * Opens a multi-turn conversation (bidi Chat; needs HTTP/2, so Node with
   * gRPC or Connect over HTTP/2). `source` picks where it starts: `{}` a fresh
   * session, `{ sessionId }` the session's latest snapshot, `{ snapshotId }`
   * that snapshot (server-managed agents), `{ state }` a client-held state
   * (client-managed agents). Source errors (unknown agent, wrong source kind)
   * surface on the first turn and on `output()`. Throws a `ConnectError` with
   * `Code.Unimplemented` ("Chat needs HTTP/2 …") at once when the client's
   * transport cannot stream both ways (gRPC-Web or Connect over HTTP/1.1,
   * browsers).
   */
  chat<S = unknown>(agent: string, source: AgentInit<S> = {}, options?: CallOptions): Conversation<S> {
    if (this.halfDuplex !== undefined) throw chatNeedsHttp2(this.halfDuplex);
    return new Conversation<S>(this.rpc, agent, source, options, this.retrier);
  }

  /**
   * One turn (Run): sends `input` (a string is a user text) from `source` and
   * resolves with the output. A retry re-sends the same request ID, so the
   * turn runs once and the retry answers with its output.
   */
  async run<S = unknown>(
    agent: string,
    input: ConversationInput,
    source: AgentInit<S> = {},
    options?: CallOptions,
  ): Promise<AgentOutput<S>> {
    return call(async () => {
      const request = { init: agentInitToWire(agent, source), input: encodeInput(normalizeInput(input)) };
      const response = await this.retrier.call("Run", options, (o) => this.rpc.run(request, o));
      if (!response.output) throw clientError(Code.DataLoss, "the Run response carried no output");
      return agentOutputFromWire(response.output) as AgentOutput<S>;
    });
  }

  /**
   * One turn, streamed (RunStream): iterate the result for its chunks, await
   * it for the output. Works over HTTP/1.1 and in browsers, where it is the way
   * to stream a turn (continue with `{ sessionId }` or `{ state }`). Encoding
   * errors throw a `ConnectError` at once; RPC errors reject the output.
   */
  runStream<S = unknown>(
    agent: string,
    input: ConversationInput,
    source: AgentInit<S> = {},
    options?: CallOptions,
  ): StreamedRun<S> {
    let request;
    try {
      request = { init: agentInitToWire(agent, source), input: encodeInput(normalizeInput(input)) };
    } catch (err) {
      throw toClientError(err);
    }
    const budget = this.retrier.budget("RunStream", options);
    const responses = retryingStream(
      budget,
      chunkReplayResume((o) => this.rpc.runStream(request, o)),
    );
    return new StreamedRun<S>(responses, source.state?.custom);
  }

  /** Reads a snapshot by ID (`sessionId`, if also given, is asserted), or a session's latest snapshot. */
  async getSnapshot(agent: string, ref: SnapshotRef, options?: CallOptions): Promise<SessionSnapshot> {
    return call(async () => {
      const request = { agent, snapshotId: ref.snapshotId ?? "", sessionId: ref.sessionId ?? "" };
      const response = await this.retrier.call("GetSnapshot", options, (o) => this.rpc.getSnapshot(request, o));
      if (!response.snapshot) throw clientError(Code.DataLoss, "the GetSnapshot response carried no snapshot");
      return snapshotFromWire(response.snapshot);
    });
  }

  /** One page of a session's snapshots, newest first (without state unless `includeState`). */
  async listSnapshots(
    agent: string,
    sessionId: string,
    page: ListSnapshotsOptions = {},
    options?: CallOptions,
  ): Promise<SnapshotPage> {
    return call(async () => {
      const request = {
        agent,
        sessionId,
        pageSize: page.pageSize ?? 0,
        pageToken: page.pageToken ?? "",
        includeState: page.includeState ?? false,
      };
      const response = await this.retrier.call("ListSnapshots", options, (o) => this.rpc.listSnapshots(request, o));
      return {
        snapshots: response.snapshots.map(snapshotFromWire),
        ...(response.nextPageToken ? { nextPageToken: response.nextPageToken } : {}),
      };
    });
  }

  /**
   * The snapshot's status now and on every change, ending after a terminal
   * status (`completed`, `failed`, `aborted`, `expired`). Stop early with
   * `options.signal` (the iteration then throws `Code.Canceled`) or by
   * breaking out of the loop.
   */
  async *watchSnapshot(
    agent: string,
    snapshotId: string,
    options?: CallOptions,
  ): AsyncGenerator<SnapshotStatus, void, undefined> {
    let last: SnapshotStatus | undefined;
    let reopened = false;
    const responses = retryingStream(this.retrier.budget("WatchSnapshot", options), {
      open: (o) => this.rpc.watchSnapshot({ agent, snapshotId }, o),
      // a re-opened watch starts with the current status: skip it when it is the one delivered last
      deliver: (response) => {
        const status = snapshotStatusFromWire(response.status);
        const repeat = reopened && status === last;
        reopened = false;
        if (status) last = status;
        return status !== undefined && !repeat;
      },
      reopened: () => (reopened = true),
      isFinal: (response) => {
        const status = snapshotStatusFromWire(response.status);
        return status !== undefined && isTerminalStatus(status);
      },
    });
    try {
      for await (const response of responses) {
        const status = snapshotStatusFromWire(response.status)!;
        yield status;
        if (isTerminalStatus(status)) return;
      }
    } catch (err) {
      throw toClientError(err);
    }
  }

  /**
   * Attaches to detached work (AttachInvocation): `snapshotId` is the pending
   * snapshot its DETACHED output returned. Iterate the result for the chunks
   * after `afterSequence` (0: every chunk streamed after detach), recorded
   * ones first, then live; await it for the work's output once it ended. Any
   * server sharing the store answers. After a dropped connection, attach again
   * with `afterSequence: run.lastSequence` to receive the rest exactly once.
   * Errors (as `ConnectError`): `Code.NotFound` (unknown or another owner's
   * snapshot), `Code.FailedPrecondition` (not detached work, or its chunks are
   * past the server's retention), `Code.Unavailable` (the work stopped before
   * it ended).
   */
  attach<S = unknown>(
    agent: string,
    snapshotId: string,
    options: CallOptions & { afterSequence?: number } = {},
  ): StreamedRun<S> {
    const { afterSequence = 0, ...callOptions } = options;
    let last = afterSequence;
    const responses = retryingStream(this.retrier.budget("AttachInvocation", callOptions), {
      open: (o) => this.rpc.attachInvocation({ agent, snapshotId, afterSequence: last }, o),
      deliver: (response) => {
        if (response.chunk?.sequence) last = Number(response.chunk.sequence);
        return true;
      },
      reopened: () => undefined,
      isFinal: (response) => response.output !== undefined,
    });
    return new StreamedRun<S>(responses, undefined, "AttachInvocation", afterSequence);
  }

  /**
   * Aborts a pending (detached) snapshot, cancelling its background work.
   * Resolves with `"aborted"` on success, or the existing status of a snapshot
   * that was already terminal.
   */
  async abort(agent: string, snapshotId: string, options?: CallOptions): Promise<SnapshotStatus> {
    return call(async () => {
      const response = await this.retrier.call("Abort", options, (o) => this.rpc.abort({ agent, snapshotId }, o));
      const status = snapshotStatusFromWire(response.status);
      if (!status) throw clientError(Code.DataLoss, "the Abort response carried no status");
      return status;
    });
  }

  /**
   * Sends a control input to detached work (its pending `snapshotId`): cancel
   * its running turn (`{ cancel: true }`; the work goes on with its next
   * input, or ends), or steer it (`{ steer: true, message }`, or pass a
   * string). Resolves with the server's ack. Sent once, never retried (a
   * retried cancel could stop a later turn): on a transport failure, check
   * the work's stream (`attach`) for the ack.
   */
  async sendInvocationInput(
    agent: string,
    snapshotId: string,
    input: AgentInput | string,
    options?: CallOptions,
  ): Promise<InputAck> {
    return call(async () => {
      const normalized: AgentInput = typeof input === "string" ? { ...normalizeInput(input), steer: true } : input;
      const response = await this.rpc.sendInvocationInput(
        { agent, snapshotId, input: encodeInput(normalized) },
        options,
      );
      if (!response.ack) throw clientError(Code.DataLoss, "the SendInvocationInput response carried no ack");
      return inputAckFromWire(response.ack);
    });
  }

  /** The caller's sessions, newest-updated first, fetching page after page as it is iterated. */
  async *listSessions(
    filter: ListSessionsOptions = {},
    options?: CallOptions,
  ): AsyncGenerator<SessionInfo, void, undefined> {
    let pageToken = "";
    do {
      const request = {
        agent: filter.agent ?? "",
        labels: filter.labels ?? {},
        ...(filter.updatedAfter !== undefined ? { updatedAfter: timestampFromMs(filter.updatedAfter) } : {}),
        pageSize: filter.pageSize ?? 0,
        pageToken,
      };
      const page = await call(() =>
        this.retrier.call("ListSessions", options, (o) => this.rpc.listSessions(request, o)),
      );
      for (const session of page.sessions) yield sessionFromWire(session);
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** One of the caller's sessions (`Code.NotFound` when unknown, another tenant's, deleted or expired). */
  async getSession(sessionId: string, options?: CallOptions): Promise<SessionInfo> {
    return call(async () => {
      const response = await this.retrier.call("GetSession", options, (o) => this.rpc.getSession({ sessionId }, o));
      return sessionFromWire(requireSession(response.session));
    });
  }

  /** Sets/removes labels and changes the time-to-live; resolves with the updated session. */
  async updateSession(sessionId: string, update: SessionUpdate, options?: CallOptions): Promise<SessionInfo> {
    return call(async () => {
      const request = {
        sessionId,
        setLabels: update.setLabels ?? {},
        removeLabels: update.removeLabels ?? [],
        ...(update.ttlMs === null
          ? { clearTtl: true }
          : update.ttlMs !== undefined
            ? { ttl: durationFromMs(update.ttlMs) }
            : {}),
      };
      const response = await this.retrier.call("UpdateSession", options, (o) => this.rpc.updateSession(request, o));
      return sessionFromWire(requireSession(response.session));
    });
  }

  /**
   * Aborts the session's work and deletes it; resolves false when there was
   * nothing to delete. Sent with a request ID, so a retry answers as the first
   * call did.
   */
  async deleteSession(sessionId: string, options?: CallOptions): Promise<boolean> {
    const request = { sessionId, requestId: newRequestId() };
    return call(
      async () =>
        (await this.retrier.call("DeleteSession", options, (o) => this.rpc.deleteSession(request, o))).deleted,
    );
  }

  /** Describes every agent the server serves. */
  async listAgents(options?: CallOptions): Promise<AgentDescriptor[]> {
    return call(async () =>
      (await this.retrier.call("ListAgents", options, (o) => this.rpc.listAgents({}, o))).agents.map(agentInfoFromWire),
    );
  }
}

function requireSession<T>(session: T | undefined): T {
  if (!session) throw clientError(Code.DataLoss, "the response carried no session");
  return session;
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toClientError(err);
  }
}
