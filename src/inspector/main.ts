/**
 * The inspector's entry point (bundled by esbuild into inspector.js, served
 * by `agentd serve --inspector` at /inspector/): a single-page app that is a
 * client of agentd's public API only, over Connect from the page's own
 * origin. It asks for a bearer token when the server requires one (kept in
 * memory only), then shows the view the URL names.
 */
import { Code, ConnectError, type AgentDescriptor } from "../client/browser.js";
import type { AppContext } from "./app-context.js";
import { chatView } from "./chat-view.js";
import { Connection } from "./connection.js";
import { h, replaceChildren } from "./element.js";
import { errorBox } from "./format.js";
import { parseRoute, routePath, type Route } from "./route.js";
import { sessionView } from "./session-view.js";
import { sessionsView } from "./sessions-view.js";

const connection = new Connection(location.origin);
const main = document.getElementById("main")!;
const access = document.getElementById("access")!;
let agents: AgentDescriptor[] = [];
let connected = false;
let viewScope = new AbortController();

/** Shows the view of the current URL, ending the streams of the previous one. */
function render(): void {
  viewScope.abort();
  viewScope = new AbortController();
  const route = parseRoute(location.pathname, location.search);
  const ctx: AppContext = { connection, agents, navigate, link, signal: viewScope.signal };
  document.querySelectorAll("header nav a").forEach((a) => {
    const current = a.getAttribute("data-view") === (route.view === "session" ? "sessions" : route.view);
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  replaceChildren(main, viewFor(ctx, route));
}

function viewFor(ctx: AppContext, route: Route): HTMLElement {
  switch (route.view) {
    case "sessions":
      return sessionsView(ctx);
    case "session":
      return sessionView(ctx, route.sessionId, route.snapshotId);
    case "chat":
      return chatView(ctx, route);
    case "not-found":
      return h(
        "section",
        {},
        h("h2", {}, "Not found"),
        h("p", {}, `No view at ${route.path}.`),
        link({ view: "sessions" }, "Sessions"),
      );
  }
}

function navigate(route: Route): void {
  history.pushState(null, "", routePath(route));
  render();
}

function link(route: Route, label: string, attrs: Record<string, string> = {}): HTMLAnchorElement {
  const a = h("a", { ...attrs, href: routePath(route) }, label);
  a.addEventListener("click", (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(route);
  });
  return a;
}

/**
 * Reads the agents (the first call): on success shows the URL's view; on
 * UNAUTHENTICATED (the server requires credentials) asks for a token.
 */
async function connect(): Promise<void> {
  try {
    agents = await connection.client.listAgents();
    connected = true;
  } catch (err) {
    connected = false;
    if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
      tokenForm(connection.hasToken ? err : undefined);
      return;
    }
    replaceChildren(main, errorBox(err));
    return;
  }
  replaceChildren(
    access,
    connection.hasToken
      ? h(
          "button",
          {
            type: "button",
            onclick: () => {
              connection.setToken(undefined);
              void connect();
            },
          },
          "Forget token",
        )
      : h("span", { class: "muted" }, "no authentication"),
  );
  render();
}

/** The token prompt: the token is kept in memory and sent as the bearer token of every call. */
function tokenForm(failure: unknown): void {
  const input = h("input", { type: "password", name: "token", autocomplete: "off", size: 40, required: true });
  const form = h(
    "form",
    { class: "token-form" },
    h("h2", {}, "Token"),
    h(
      "p",
      {},
      "This server requires authentication. The token is kept in this page's memory only, and sent as the bearer token of every call; every view shows what its tenant may see.",
    ),
    h("label", {}, "Bearer token ", input),
    h("button", { type: "submit" }, "Connect"),
    failure !== undefined && errorBox(failure),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    connection.setToken(input.value);
    void connect();
  });
  replaceChildren(access, h("span", { class: "muted" }, "token required"));
  replaceChildren(main, form);
  input.focus();
}

window.addEventListener("popstate", render);
document.querySelectorAll<HTMLAnchorElement>("header nav a").forEach((a) => {
  a.addEventListener("click", (event) => {
    event.preventDefault();
    if (connected) navigate(parseRoute(new URL(a.href).pathname));
  });
});
void connect();
