import type { AgentDescriptor } from "../client/browser.js";
import type { Connection } from "./connection.js";
import type { Route } from "./route.js";

/** What every view gets: the connection, the served agents, and navigation. */
export interface AppContext {
  readonly connection: Connection;
  /** The agents ListAgents returned when the page opened (or the token was given). */
  readonly agents: readonly AgentDescriptor[];
  /** Shows `route` and records it in the browser history (deep-linkable). */
  navigate(route: Route): void;
  /** A link to `route` that navigates without reloading the page. */
  link(route: Route, label: string, attrs?: Record<string, string>): HTMLAnchorElement;
  /**
   * A signal aborted when the view is left: streams and polls a view
   * started stop with it.
   */
  readonly signal: AbortSignal;
}
