import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as McpToolInfo,
} from "@modelcontextprotocol/sdk/types.js";
import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "pino";
import { AgentError } from "../../errors/agent-error.js";
import type { McpServerConfig } from "./mcp-config.js";

/** How a stdio server is restarted after it exits: the delay doubles per exit from `initialMs` up to `maxMs`. */
export interface McpRestartBackoff {
  initialMs: number;
  maxMs: number;
}

/** Default restart backoff: 200 ms doubling up to 30 s. */
export const DEFAULT_MCP_BACKOFF: McpRestartBackoff = { initialMs: 200, maxMs: 30_000 };

/** A connection that lived this long resets the backoff. */
const STABLE_AFTER_MS = 30_000;
/** How long connecting (spawn + initialize) may take. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Longest stderr line logged (longer ones are cut). */
const MAX_STDERR_LINE = 2000;

/** Extra headers of the request being sent (one tool call's), for a Streamable HTTP server. */
const callHeaders = new AsyncLocalStorage<Record<string, string>>();

/** What one MCP tool call waits for. */
export interface McpCallOptions {
  /** Headers added to this call's HTTP request (Streamable HTTP servers), over the config's. */
  headers?: Record<string, string>;
  /** Cancels the call (the server is sent `notifications/cancelled`). */
  signal: AbortSignal;
  /** The call (including waiting for a restarting server) fails with {@link McpTimeoutError} after this long. */
  timeoutMs: number;
  /** The tool call's idempotency key, sent as the request's `_meta.idempotencyKey`. */
  idempotencyKey?: string;
}

/** A tool call that did not answer within its timeout. */
export class McpTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = "McpTimeoutError";
  }
}

/**
 * One configured MCP server: a stdio server started and supervised (an exit
 * other than agentd's own close restarts it after a backoff; its stderr goes
 * to the log line by line), or a Streamable HTTP server connected with its
 * headers. Its tool list is cached until the server sends
 * `notifications/tools/list_changed` or reconnects.
 */
export class McpServerConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private tools: Promise<McpToolInfo[]> | undefined;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  /** The client being connected, closed by {@link close} if it comes to that first. */
  private opening: Client | undefined;
  private closed = false;

  constructor(
    /** The server's name in the config (the prefix of its tool references). */
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly logger: Logger,
    private readonly backoff: McpRestartBackoff = DEFAULT_MCP_BACKOFF,
  ) {}

  /** Starts connecting now (a failure is logged and retried with backoff). */
  start(): void {
    void this.connected().catch(() => undefined);
  }

  /** The connected client, connecting (or waiting for a scheduled restart) first when needed. */
  private connected(): Promise<Client> {
    if (this.closed) return Promise.reject(new AgentError("UNAVAILABLE", `MCP server "${this.name}" is closed`));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open();
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const client = new Client({ name: "agentd", version: "1" }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.tools = undefined;
    });
    const transport = this.transport();
    const openedAt = Date.now();
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.tools = undefined;
      if (this.closed) return;
      if (Date.now() - openedAt >= STABLE_AFTER_MS) this.failures = 0;
      this.failures++;
      const delayMs = this.restartDelay();
      this.logger.warn({ mcpServer: this.name, restartInMs: delayMs }, "MCP server connection closed; restarting");
      this.scheduleConnect(delayMs);
    };
    this.opening = client;
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      this.opening = undefined;
      await client.close().catch(() => undefined);
      this.connecting = undefined;
      this.failures++;
      const delayMs = this.restartDelay();
      this.logger.warn(
        { mcpServer: this.name, error: (err as Error).message, retryInMs: delayMs },
        "MCP server could not be started or reached",
      );
      if (!this.closed) this.scheduleConnect(delayMs);
      throw new AgentError("UNAVAILABLE", `MCP server "${this.name}" is unavailable: ${(err as Error).message}`);
    }
    this.opening = undefined;
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new AgentError("UNAVAILABLE", `MCP server "${this.name}" is closed`);
    }
    this.client = client;
    this.connecting = undefined;
    this.logger.info({ mcpServer: this.name, transport: this.config.kind }, "MCP server connected");
    return client;
  }

  private restartDelay(): number {
    return Math.min(this.backoff.initialMs * 2 ** Math.max(0, this.failures - 1), this.backoff.maxMs);
  }

  /** Connects again after `delayMs`; callers meanwhile wait for that attempt. */
  private scheduleConnect(delayMs: number): void {
    let fire!: () => void;
    const due = new Promise<void>((resolve) => (fire = resolve));
    this.restartTimer = setTimeout(fire, delayMs);
    this.restartTimer.unref();
    const attempt = due.then(() => this.open());
    attempt.catch(() => undefined);
    this.connecting = attempt;
  }

  private transport(): Transport {
    const config = this.config;
    if (config.kind === "http")
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
        // A call's own headers (the agents module's `mcpHeaders`) ride on the request that carries it.
        fetch: (url, init) => {
          const extra = callHeaders.getStore();
          if (!extra) return fetch(url, init);
          const headers = new Headers(init?.headers);
          for (const [name, value] of Object.entries(extra)) headers.set(name, value);
          return fetch(url, { ...init, headers });
        },
      });
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      // Only the usual variables (PATH, HOME, …) of agentd's environment, plus the configured ones.
      env: { ...getDefaultEnvironment(), ...config.env },
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
      stderr: "pipe",
    });
    let pending = "";
    transport.stderr?.on("data", (data: Buffer) => {
      const lines = (pending + data.toString("utf8")).split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines)
        if (line.trim() !== "")
          this.logger.info({ mcpServer: this.name, stderr: line.slice(0, MAX_STDERR_LINE) }, "MCP server stderr");
    });
    return transport;
  }

  /**
   * The server's tools (every page of `tools/list`), cached until it reports
   * a change or reconnects. Rejects AgentError UNAVAILABLE when the server
   * cannot be reached.
   */
  listTools(): Promise<McpToolInfo[]> {
    if (this.tools) return this.tools;
    const listing = (async () => {
      const client = await this.connected();
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await client.listTools(cursor !== undefined ? { cursor } : undefined);
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
      } catch (err) {
        this.transportFailed(client, err);
        throw new AgentError(
          "UNAVAILABLE",
          `MCP server "${this.name}" did not list its tools: ${(err as Error).message}`,
        );
      }
      return tools;
    })();
    this.tools = listing;
    listing.catch(() => {
      if (this.tools === listing) this.tools = undefined;
    });
    return listing;
  }

  /**
   * Calls a tool. Rejects {@link McpTimeoutError} after `timeoutMs` (the
   * server is told the request is cancelled), the signal's reason when it
   * aborts, AgentError UNAVAILABLE when the server cannot be reached.
   */
  async callTool(name: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult> {
    options.signal.throwIfAborted();
    const deadline = Date.now() + options.timeoutMs;
    const client = await waitFor(this.connected(), options);
    const remaining = Math.max(1, deadline - Date.now());
    try {
      const call = () =>
        client.callTool(
          {
            name,
            arguments: args,
            ...(options.idempotencyKey ? { _meta: { idempotencyKey: options.idempotencyKey } } : {}),
          },
          undefined,
          {
            signal: options.signal,
            timeout: remaining,
            maxTotalTimeout: remaining,
          },
        );
      const result = options.headers ? await callHeaders.run(options.headers, call) : await call();
      return result as CallToolResult;
    } catch (err) {
      if (options.signal.aborted) throw options.signal.reason;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout)
        throw new McpTimeoutError(options.timeoutMs);
      this.transportFailed(client, err);
      throw err;
    }
  }

  /**
   * After a failed request to a Streamable HTTP server: an error that is not
   * a JSON-RPC answer (the server is gone, or restarted and forgot our MCP
   * session: HTTP 404) closes the connection, so it reconnects (with backoff)
   * for the next call. A stdio server's exit is noticed by its transport.
   */
  private transportFailed(client: Client, err: unknown): void {
    if (this.config.kind !== "http" || err instanceof McpError || this.client !== client) return;
    this.logger.warn(
      { mcpServer: this.name, error: (err as Error).message },
      "MCP server request failed; reconnecting",
    );
    void client.close().catch(() => undefined);
  }

  /** Stops the server (stdio: its process) and any restart; idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    const clients = [this.client, this.opening];
    this.client = undefined;
    this.opening = undefined;
    this.connecting = undefined;
    await Promise.all(clients.map((c) => c?.close().catch(() => undefined)));
  }
}

/** `promise`, or a rejection when the call's signal aborts or its timeout passes first. */
function waitFor<T>(promise: Promise<T>, options: McpCallOptions): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new McpTimeoutError(options.timeoutMs))), options.timeoutMs);
    const onAbort = (): void => finish(() => reject(options.signal.reason));
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      settle();
    };
    options.signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => finish(() => resolve(value)),
      (err: unknown) => finish(() => reject(err)),
    );
  });
}
