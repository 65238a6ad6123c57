import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import type { Agent } from "../../runtime/agents/agent.js";
import type { AgentRegistry } from "../../runtime/agents/agent-registry.js";
import { messageText } from "../../types/content.js";
import type { Principal } from "../../types/principal.js";

/** Who an MCP request acts for: the authenticated principal and the request's headers. */
export interface McpCaller {
  principal: Principal;
  headers: Headers;
}

/** Longest `message` an MCP tool call may carry (characters). */
const MAX_MESSAGE_CHARS = 1_000_000;

const inputSchema = {
  message: z.string().min(1).max(MAX_MESSAGE_CHARS).describe("What to say to the agent."),
  session_id: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("Continue this session (the session_id a previous call returned); omit to start a new one."),
};

const outputSchema = {
  reply: z.string().describe("The agent's reply text."),
  session_id: z.string().describe("The session: pass it as session_id to continue the conversation."),
  snapshot_id: z.string().describe("The snapshot the turn committed."),
  finish_reason: z.string().describe("How the turn ended (stop, length, …)."),
};

/** The tool result of a failed call: the error's code and message, as a tool error the caller sees. */
function toolError(err: unknown): CallToolResult {
  const e = AgentError.from(err);
  return { isError: true, content: [{ type: "text", text: `${e.status}: ${e.message}` }] };
}

/**
 * One turn of `agent` for an MCP tool call: the message as user input, on a
 * new session or `session_id`'s (another tenant's session is NOT_FOUND,
 * returned as a tool error), cancelled when the MCP request is. Streamed text
 * goes out as progress notifications when the caller asked for progress.
 */
async function callAgent(
  agent: Agent<unknown>,
  args: { message: string; session_id?: string | undefined },
  caller: McpCaller,
  extra: {
    signal: AbortSignal;
    _meta?: { progressToken?: string | number };
    sendNotification: (n: {
      method: "notifications/progress";
      params: { progressToken: string | number; progress: number; message: string };
    }) => Promise<void>;
  },
): Promise<CallToolResult> {
  try {
    const connection = await agent.connect(args.session_id !== undefined ? { sessionId: args.session_id } : {}, {
      signal: extra.signal,
      principal: caller.principal,
      storeContext: { tenant: caller.principal.tenant },
      headers: caller.headers,
    });
    connection.send({ message: { role: "user", content: [{ text: args.message }] } });
    connection.close();
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    for await (const chunk of connection.stream) {
      if (progressToken === undefined || chunk.modelChunk?.role === "tool") continue;
      const text = chunk.modelChunk?.content.map((p) => p.text ?? "").join("") ?? "";
      if (text !== "")
        await extra
          .sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: ++progress, message: text },
          })
          .catch(() => undefined);
    }
    const output = await connection.output();
    if (output.finishReason === "failed")
      return toolError(new AgentError(output.error?.status ?? "INTERNAL", output.error?.message ?? "the turn failed"));
    const structured = {
      reply: messageText(output.message),
      session_id: output.sessionId,
      snapshot_id: output.snapshotId ?? "",
      finish_reason: output.finishReason,
    };
    return { content: [{ type: "text", text: structured.reply }], structuredContent: structured };
  } catch (err) {
    return toolError(err);
  }
}

/**
 * An MCP server (one per request: agentd's `/mcp` is stateless) offering one
 * tool per server-managed agent of `registry`, named like the agent, taking
 * `message` and optional `session_id` and returning the reply text with the
 * session and snapshot IDs as structured content. Client-managed agents are
 * not offered (their state travels with each call, which MCP has no place for).
 */
export function agentToolsServer(registry: AgentRegistry, caller: McpCaller): McpServer {
  const server = new McpServer({ name: "agentd", version: "1" }, { capabilities: { tools: {} } });
  for (const agent of registry.list()) {
    if (agent.descriptor().stateManagement !== "server") continue;
    server.registerTool(
      agent.name,
      {
        description: agent.description ?? `Talk to the agentd agent "${agent.name}".`,
        inputSchema,
        outputSchema,
      },
      (args, extra) => callAgent(agent, args, caller, extra as never),
    );
  }
  return server;
}
