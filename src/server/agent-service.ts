import { create } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import {
  AbortResponseSchema,
  AgentService,
  AttachInvocationResponseSchema,
  DeleteSessionResponseSchema,
  GetSessionResponseSchema,
  ListSessionsResponseSchema,
  UpdateSessionResponseSchema,
  GetSnapshotResponseSchema,
  ListAgentsResponseSchema,
  ListSnapshotsResponseSchema,
  RunResponseSchema,
  RunStreamResponseSchema,
  SendInvocationInputResponseSchema,
  WatchSnapshotResponseSchema,
} from "../../gen/ts/agentd/v1/agent_service_pb.js";
import type { AgentInit as WireAgentInit, AgentInput as WireAgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { AgentError } from "../errors/agent-error.js";
import type { AgentConnection } from "../runtime/agents/agent-connection.js";
import type { AgentRegistry } from "../runtime/agents/agent-registry.js";
import type { Principal } from "../types/principal.js";
import { principalOf } from "./auth/call-guard.js";
import { annotateCall } from "./call-log.js";
import { chatResponses, sendInput } from "./chat-stream.js";
import type { SnapshotStatus } from "../types/snapshot.js";
import { DRAIN_FOLLOW_MESSAGE, drainSignalKey, followUntilDrain } from "./drain-signal.js";
import { beforeLargeOutput } from "./large-output.js";
import { PageTokens } from "./page-tokens.js";
import { listWebhookDeliveries } from "./webhook-deliveries.js";
import type { WebhookOutbox } from "../../stores/webhook-outbox.js";
import {
  agentInfoToWire,
  agentInitFromWire,
  agentInputFromWire,
  inputAckToWire,
  agentOutputToWire,
  optionalString,
  snapshotStatusToWire,
  durationToMs,
  sessionToWire,
  snapshotToWire,
  streamChunkToWire,
} from "../protocol/index.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";

/**
 * Registers `agentd.v1.AgentService` on a router: every RPC of the wire
 * contract, backed by the agents in `registry`. Runtime AgentErrors become RPC
 * statuses unchanged (see error-mapping.ts); in-band turn failures are outputs.
 * Page tokens are signed with `options.pageTokens` (default: a random key of
 * this process), so a changed or foreign token is INVALID_ARGUMENT.
 */
export function agentServiceRoutes(
  registry: AgentRegistry,
  options: AgentServiceOptions = {},
): (router: ConnectRouter) => void {
  const pageTokens = options.pageTokens ?? PageTokens.random();
  const open = (init: WireAgentInit | undefined, input: WireAgentInput | undefined, ctx: HandlerContext) =>
    openConnection(registry, init, input, ctx);
  return (router) =>
    router.service(AgentService, {
      chat: (requests, ctx) => chatResponses(requests, ctx, (init, input) => open(init, input, ctx)),

      async run(request, ctx) {
        const connection = await open(request.init, request.input, ctx);
        sendInput(connection, requireInput(request.input));
        connection.close();
        for await (const _ of connection.stream);
        const output = await connection.output();
        annotateCall(ctx, { snapshotId: output.snapshotId });
        const encodeLater = beforeLargeOutput(output);
        if (encodeLater) await encodeLater; // no hop for a normal output
        return create(RunResponseSchema, { output: agentOutputToWire(output) });
      },

      async *runStream(request, ctx) {
        const connection = await open(request.init, request.input, ctx);
        sendInput(connection, requireInput(request.input));
        connection.close();
        for await (const chunk of connection.stream) {
          yield create(RunStreamResponseSchema, { chunk: streamChunkToWire(chunk) });
        }
        const output = await connection.output();
        annotateCall(ctx, { snapshotId: output.snapshotId });
        const encodeLater = beforeLargeOutput(output);
        if (encodeLater) await encodeLater; // no hop for a normal output
        yield create(RunStreamResponseSchema, { output: agentOutputToWire(output) });
      },

      async getSnapshot(request, ctx) {
        annotateCall(ctx, { agent: request.agent, snapshotId: request.snapshotId, sessionId: request.sessionId });
        const agent = registry.get(request.agent);
        const ref = { snapshotId: optionalString(request.snapshotId), sessionId: optionalString(request.sessionId) };
        const snapshot = await agent.getSnapshot(ref, unaryCallerOf(ctx));
        annotateCall(ctx, { snapshotId: snapshot.snapshotId, sessionId: snapshot.sessionId });
        return create(GetSnapshotResponseSchema, { snapshot: snapshotToWire(snapshot) });
      },

      async listSnapshots(request, ctx) {
        annotateCall(ctx, { agent: request.agent, sessionId: request.sessionId });
        const agent = registry.get(request.agent);
        const caller = unaryCallerOf(ctx);
        const scope = ["snapshots", caller.principal.tenant, request.agent, request.sessionId];
        const page = await agent.listSnapshots(
          request.sessionId,
          {
            pageSize: request.pageSize,
            pageToken: request.pageToken ? pageTokens.verify(request.pageToken, scope) : undefined,
            includeState: request.includeState,
          },
          caller,
        );
        return create(ListSnapshotsResponseSchema, {
          snapshots: page.snapshots.map((s) => snapshotToWire(s, { includeState: request.includeState })),
          nextPageToken: page.nextPageToken ? pageTokens.sign(page.nextPageToken, scope) : "",
        });
      },

      async *watchSnapshot(request, ctx) {
        annotateCall(ctx, { agent: request.agent, snapshotId: request.snapshotId });
        const agent = registry.get(request.agent);
        const follow = followUntilDrain(ctx.signal, ctx.values.get(drainSignalKey));
        let last: SnapshotStatus | undefined;
        try {
          for await (const status of agent.watchSnapshot(request.snapshotId, follow.signal, callerOf(ctx))) {
            last = status;
            yield create(WatchSnapshotResponseSchema, {
              snapshotId: request.snapshotId,
              status: snapshotStatusToWire(status),
            });
          }
        } catch (err) {
          if (follow.drained()) throw new AgentError("UNAVAILABLE", DRAIN_FOLLOW_MESSAGE);
          throw err;
        }
        // Cut by the drain before a terminal status: the client watches again elsewhere.
        if (follow.drained() && (last === undefined || last === "pending"))
          throw new AgentError("UNAVAILABLE", DRAIN_FOLLOW_MESSAGE);
      },

      async abort(request, ctx) {
        annotateCall(ctx, { agent: request.agent, snapshotId: request.snapshotId });
        const agent = registry.get(request.agent);
        const status = await agent.abort(request.snapshotId, unaryCallerOf(ctx));
        return create(AbortResponseSchema, { snapshotId: request.snapshotId, status: snapshotStatusToWire(status) });
      },

      async sendInvocationInput(request, ctx) {
        annotateCall(ctx, { agent: request.agent, snapshotId: request.snapshotId });
        const agent = registry.get(request.agent);
        if (!request.input)
          throw new AgentError("INVALID_ARGUMENT", "input is required: cancel, or steer with a message");
        const ack = await agent.sendInput(request.snapshotId, agentInputFromWire(request.input), callerOf(ctx));
        return create(SendInvocationInputResponseSchema, { ack: inputAckToWire(ack) });
      },

      async *attachInvocation(request, ctx) {
        annotateCall(ctx, { agent: request.agent, snapshotId: request.snapshotId });
        const agent = registry.get(request.agent);
        const follow = followUntilDrain(ctx.signal, ctx.values.get(drainSignalKey));
        const items = agent.attach(
          { snapshotId: request.snapshotId, afterSequence: request.afterSequence },
          follow.signal,
          callerOf(ctx),
        );
        let ended = false;
        try {
          for await (const item of items) {
            if ("chunk" in item) {
              yield create(AttachInvocationResponseSchema, { chunk: streamChunkToWire(item.chunk) });
            } else {
              ended = true;
              annotateCall(ctx, { sessionId: item.output.sessionId });
              yield create(AttachInvocationResponseSchema, { output: agentOutputToWire(item.output) });
            }
          }
        } catch (err) {
          if (!ended && follow.drained()) throw new AgentError("UNAVAILABLE", DRAIN_FOLLOW_MESSAGE);
          throw err;
        }
        if (!ended && follow.drained()) throw new AgentError("UNAVAILABLE", DRAIN_FOLLOW_MESSAGE);
      },

      async listSessions(request, ctx) {
        annotateCall(ctx, { agent: request.agent });
        if (request.pageSize < 0)
          throw new AgentError("INVALID_ARGUMENT", `page_size must not be negative, got ${request.pageSize}`);
        const { storeContext } = unaryCallerOf(ctx);
        const scope = [
          "sessions",
          storeContext.tenant,
          request.agent,
          JSON.stringify(Object.entries(request.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
          request.updatedAfter ? String(timestampMs(request.updatedAfter)) : "",
        ];
        const page = await registry.lifecycle.list(
          {
            ...(request.agent ? { agent: request.agent } : {}),
            labels: request.labels,
            ...(request.updatedAfter ? { updatedAfter: timestampMs(request.updatedAfter) } : {}),
            ...(request.pageSize ? { pageSize: request.pageSize } : {}),
            ...(request.pageToken ? { pageToken: pageTokens.verify(request.pageToken, scope) } : {}),
          },
          storeContext,
        );
        return create(ListSessionsResponseSchema, {
          sessions: page.sessions.map(sessionToWire),
          nextPageToken: page.nextPageToken ? pageTokens.sign(page.nextPageToken, scope) : "",
        });
      },

      async getSession(request, ctx) {
        annotateCall(ctx, { sessionId: request.sessionId });
        const session = await registry.lifecycle.get(request.sessionId, unaryCallerOf(ctx).storeContext);
        annotateCall(ctx, { agent: session.agent });
        return create(GetSessionResponseSchema, { session: sessionToWire(session) });
      },

      async updateSession(request, ctx) {
        annotateCall(ctx, { sessionId: request.sessionId });
        if (request.clearTtl && request.ttl)
          throw new AgentError("INVALID_ARGUMENT", "send either ttl or clear_ttl, not both");
        const session = await registry.lifecycle.update(
          request.sessionId,
          {
            setLabels: request.setLabels,
            removeLabels: request.removeLabels,
            ...(request.clearTtl ? { ttlMs: null } : request.ttl ? { ttlMs: durationToMs(request.ttl, "ttl") } : {}),
          },
          unaryCallerOf(ctx).storeContext,
        );
        return create(UpdateSessionResponseSchema, { session: sessionToWire(session) });
      },

      async deleteSession(request, ctx) {
        annotateCall(ctx, { sessionId: request.sessionId });
        const deleted = await registry.lifecycle.delete(
          request.sessionId,
          unaryCallerOf(ctx).storeContext,
          optionalString(request.requestId),
        );
        return create(DeleteSessionResponseSchema, { deleted });
      },

      listWebhookDeliveries: (request, ctx) =>
        listWebhookDeliveries(options.webhooks, request, callerOf(ctx).storeContext.tenant, pageTokens),

      async listAgents() {
        return create(ListAgentsResponseSchema, {
          agents: registry.list().map((a) => agentInfoToWire(a.descriptor())),
        });
      },
    });
}

/** Options of {@link agentServiceRoutes}. */
export interface AgentServiceOptions {
  /**
   * Signs and checks ListSessions / ListSnapshots page tokens; default a
   * random key of this process (tokens then work on this instance only, until
   * it restarts). Give every instance behind one address the same
   * `PageTokens.fromSecret(...)` (`--page-token-secret-file`).
   */
  pageTokens?: PageTokens;
  /** The webhook outbox ListWebhookDeliveries reads; unset: webhooks are off (FAILED_PRECONDITION). */
  webhooks?: WebhookOutbox;
}

/**
 * Opens the invocation of a call: `wireInit` and the call's first input, if
 * it came with the init (its request ID lets a retried new-session call find
 * the session the first attempt created, and a retry wait for its original).
 */
async function openConnection(
  registry: AgentRegistry,
  wireInit: WireAgentInit | undefined,
  firstInput: WireAgentInput | undefined,
  ctx: HandlerContext,
): Promise<AgentConnection> {
  if (!wireInit) throw new AgentError("INVALID_ARGUMENT", "init is required (agent name and resume source)");
  const { agent: name, init } = agentInitFromWire(wireInit);
  annotateCall(ctx, { agent: name, sessionId: init.sessionId, snapshotId: init.snapshotId });
  const agent = registry.get(name);
  const requestId = firstInput?.requestId;
  const connection = await agent.connect(init, {
    signal: ctx.signal,
    ...callerOf(ctx),
    ...(requestId ? { requestId } : {}),
  });
  annotateCall(ctx, { sessionId: connection.sessionId });
  return connection;
}

/**
 * Who a call acts for, as the runtime takes it: the principal the call guard
 * established (anonymous without authentication), its tenant as the store
 * context (the owner of sessions it creates; other owners' sessions are
 * NOT_FOUND), and the request headers for transforms.
 */
function callerOf(ctx: HandlerContext): { principal: Principal; storeContext: { tenant: string }; headers: Headers } {
  const principal = principalOf(ctx);
  return { principal, storeContext: { tenant: principal.tenant }, headers: ctx.requestHeader };
}

/**
 * {@link callerOf} for a unary call: its store context also carries the
 * call's deadline (grpc-timeout, connect-timeout-ms), so the store's retries
 * across a MongoDB election stop in time for the answer to reach the caller.
 * Not for invocations: their store context outlives the call (detached work).
 */
function unaryCallerOf(ctx: HandlerContext): ReturnType<typeof callerOf> & { storeContext: { deadline?: number } } {
  const caller = callerOf(ctx);
  const timeoutMs = ctx.timeoutMs();
  return timeoutMs === undefined
    ? caller
    : { ...caller, storeContext: { ...caller.storeContext, deadline: Date.now() + timeoutMs } };
}

function requireInput(input: WireAgentInput | undefined): WireAgentInput {
  if (!input) throw new AgentError("INVALID_ARGUMENT", "input is required");
  return input;
}
