import { stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isAgent, type Agent } from "../runtime/agents/agent.js";
import type { Authenticate } from "../server/auth/authenticator.js";
import type { WebhookEndpointHook } from "../runtime/webhooks/webhook-endpoints.js";
import { describeModuleLoadFailure } from "./module-load-failure.js";
import type { McpHeadersHook } from "../tools/mcp/mcp-tool.js";

/** An agents module that cannot be used; the message names the module and the fix. */
export class AgentModuleError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AgentModuleError";
  }
}

/**
 * Every Agent a module exports: the default export (an agent or an array of
 * agents) and every named export that is an agent or an array of agents, each
 * instance once, in export order. Agents are recognised by their brand
 * (`__agentdAgent`), so modules that import agentd through another path work.
 */
export function collectAgents(moduleNamespace: Record<string, unknown>): Agent<unknown>[] {
  const found: Agent<unknown>[] = [];
  const add = (value: unknown): void => {
    if (isAgent(value) && !found.includes(value)) found.push(value);
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(add);
    else add(value);
  };
  if ("default" in moduleNamespace) visit(moduleNamespace.default);
  for (const [name, value] of Object.entries(moduleNamespace)) if (name !== "default") visit(value);
  return found;
}

/** What the agents modules export: agents, and `authenticate` hooks. */
export interface LoadedModules {
  agents: Agent<unknown>[];
  /** For each agent, the specifier of the module that exported it. */
  sources: string[];
  /** Each module's `authenticate` export, in module order. */
  authenticators: Authenticate[];
  /** The `webhookEndpoint` export (per-tenant webhook endpoints), when a module has one. */
  webhookEndpoint?: WebhookEndpointHook;
  /** The `mcpHeaders` export (per-call headers of MCP tool calls), when a module has one. */
  mcpHeaders?: McpHeadersHook;
}

/**
 * Imports each module (a path relative to `cwd`, an absolute path, or a
 * package specifier) and returns the agents they export, in order, and their
 * `authenticate` functions. Throws {@link AgentModuleError} for a missing
 * file, an import that throws, an `authenticate` export that is not a
 * function, or a module that exports neither agents nor `authenticate`.
 */
export async function loadAgentModules(
  specifiers: readonly string[],
  cwd: string = process.cwd(),
): Promise<LoadedModules> {
  const agents: Agent<unknown>[] = [];
  const sources: string[] = [];
  const authenticators: Authenticate[] = [];
  let webhookEndpoint: WebhookEndpointHook | undefined;
  let mcpHeaders: McpHeadersHook | undefined;
  for (const specifier of specifiers) {
    const looksLikePath = specifier.startsWith(".") || isAbsolute(specifier) || /\.[cm]?[jt]sx?$/.test(specifier);
    let target = specifier;
    let path: string | undefined;
    if (looksLikePath) {
      path = resolve(cwd, specifier);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) throw new AgentModuleError(`agents module "${specifier}" not found (looked for ${path})`);
      target = pathToFileURL(path).href;
    }
    let namespace: Record<string, unknown>;
    try {
      namespace = (await import(target)) as Record<string, unknown>;
    } catch (err) {
      const reason = describeModuleLoadFailure(err, path);
      throw new AgentModuleError(`agents module "${specifier}" failed to load: ${reason}${typeScriptHint(specifier)}`, {
        cause: err,
      });
    }
    const exported = collectAgents(namespace);
    const authenticate = namespace.authenticate;
    if (authenticate !== undefined && typeof authenticate !== "function") {
      throw new AgentModuleError(
        `agents module "${specifier}" exports "authenticate" that is not a function (request) => Principal | null`,
      );
    }
    const endpointHook = namespace.webhookEndpoint;
    if (endpointHook !== undefined) {
      if (typeof endpointHook !== "function" || webhookEndpoint !== undefined)
        throw new AgentModuleError(
          `agents module "${specifier}" exports "webhookEndpoint" that is not a function (tenant) => {url, secrets} | undefined, or another module already does`,
        );
      webhookEndpoint = endpointHook as WebhookEndpointHook;
    }
    const headersHook = namespace.mcpHeaders;
    if (headersHook !== undefined) {
      if (typeof headersHook !== "function" || mcpHeaders !== undefined)
        throw new AgentModuleError(
          `agents module "${specifier}" exports "mcpHeaders" that is not a function ({server, tool, principal}) => headers | undefined, or another module already does`,
        );
      mcpHeaders = headersHook as McpHeadersHook;
    }
    if (
      exported.length === 0 &&
      authenticate === undefined &&
      endpointHook === undefined &&
      headersHook === undefined
    ) {
      throw new AgentModuleError(
        `agents module "${specifier}" exports no agents: export Agent instances (e.g. from defineCustomAgent) as default, an array, or named exports`,
      );
    }
    agents.push(...exported);
    sources.push(...exported.map(() => specifier));
    if (authenticate !== undefined) authenticators.push(authenticate as Authenticate);
  }
  return {
    agents,
    sources,
    authenticators,
    ...(webhookEndpoint ? { webhookEndpoint } : {}),
    ...(mcpHeaders ? { mcpHeaders } : {}),
  };
}

/**
 * For a TypeScript module when bin/agentd.js found no tsx to register: how to
 * get TypeScript agents modules loaded.
 */
function typeScriptHint(specifier: string): string {
  const tsxRegistered = (globalThis as Record<symbol, unknown>)[Symbol.for("agentd.tsxRegistered")];
  if (tsxRegistered !== false || !/\.[cm]?tsx?$/.test(specifier)) return "";
  return " (TypeScript agents modules need tsx: `npm install tsx` next to agentd, or write the module in JavaScript)";
}
