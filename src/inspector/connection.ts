import type { Interceptor } from "@connectrpc/connect";
import { createAgentClient, type AgentClient } from "../client/browser.js";

/**
 * How the inspector reaches agentd: the page's own origin over Connect (the
 * project's browser client), with the bearer token the user typed, if any.
 * The token lives in this object only (memory): never in storage, cookies or
 * the URL, so it is gone when the tab closes or reloads.
 */
export class Connection {
  private token: string | undefined;
  /** The client every view uses; rebuilt when the token changes. */
  client: AgentClient;

  /** A connection to `baseUrl` (the page's origin), without a token. */
  constructor(private readonly baseUrl: string) {
    this.client = this.build();
  }

  /** Whether a token was given. */
  get hasToken(): boolean {
    return this.token !== undefined;
  }

  /** Sends `token` as `authorization: Bearer <token>` on every later call; `undefined` forgets it. */
  setToken(token: string | undefined): void {
    this.token = token === undefined || token.trim() === "" ? undefined : token.trim();
    this.client = this.build();
  }

  private build(): AgentClient {
    const bearer: Interceptor = (next) => async (req) => {
      if (this.token !== undefined) req.header.set("authorization", `Bearer ${this.token}`);
      return next(req);
    };
    // JSON keeps the calls readable in the browser's network panel; retries stay off so errors show at once.
    return createAgentClient(this.baseUrl, { interceptors: [bearer], useBinaryFormat: false, retry: false });
  }
}
