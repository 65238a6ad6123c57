import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { SessionInfo } from "../types/session-info.js";
import { sessionFromWire } from "../protocol/session-wire.js";
import type { AppContext } from "./app-context.js";
import { append, h, replaceChildren } from "./element.js";
import {
  errorBox,
  formatDuration,
  formatLabels,
  formatTime,
  parseDuration,
  parseLabels,
  statusBadge,
} from "./format.js";

/** Sessions per page of the list. */
export const SESSIONS_PAGE_SIZE = 20;

/** The filters of the sessions list. */
interface SessionFilter {
  agent: string;
  labels: Record<string, string>;
  updatedAfter?: number;
}

/**
 * The sessions view: a filter form (agent, labels, updated since), one page
 * of the caller's sessions (newest-updated first) with Next/Previous, each
 * row linking to its session, with label/TTL editing and deletion after an
 * inline confirmation.
 */
export function sessionsView(ctx: AppContext): HTMLElement {
  const root = h("section", { class: "sessions", "aria-label": "Sessions" });
  const list = h("div", { class: "session-list" });
  let filter: SessionFilter = { agent: "", labels: {} };
  // tokens of the pages shown so far: tokens[i] fetches page i
  let tokens: string[] = [""];
  let page = 0;

  const agentSelect = h(
    "select",
    { name: "agent" },
    h("option", { value: "" }, "any agent"),
    ...ctx.agents.map((a) => h("option", { value: a.name }, a.name)),
  );
  const labelsInput = h("input", { name: "labels", placeholder: "key=value, …", size: 24 });
  const sinceInput = h("input", { name: "updated-after", type: "datetime-local", step: "1" });
  const form = h(
    "form",
    { class: "filters" },
    h("label", {}, "Agent ", agentSelect),
    h("label", {}, "Labels ", labelsInput),
    h("label", {}, "Updated since ", sinceInput),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      filter = {
        agent: agentSelect.value,
        labels: parseLabels(labelsInput.value),
        ...(sinceInput.value ? { updatedAfter: new Date(sinceInput.value).getTime() } : {}),
      };
    } catch (err) {
      replaceChildren(list, errorBox(err));
      return;
    }
    tokens = [""];
    page = 0;
    void load();
  });

  const load = async (): Promise<void> => {
    replaceChildren(list, h("p", { class: "muted" }, "Loading…"));
    try {
      const response = await ctx.connection.client.rpc.listSessions(
        {
          agent: filter.agent,
          labels: filter.labels,
          ...(filter.updatedAfter !== undefined ? { updatedAfter: timestampFromMs(filter.updatedAfter) } : {}),
          pageSize: SESSIONS_PAGE_SIZE,
          pageToken: tokens[page] ?? "",
        },
        { signal: ctx.signal },
      );
      tokens[page + 1] = response.nextPageToken;
      renderPage(response.sessions.map(sessionFromWire), response.nextPageToken !== "");
    } catch (err) {
      replaceChildren(list, errorBox(err));
    }
  };

  const renderPage = (sessions: SessionInfo[], hasNext: boolean): void => {
    const pager = h(
      "nav",
      { class: "pager" },
      h("button", { type: "button", disabled: page === 0, onclick: () => ((page -= 1), void load()) }, "← Previous"),
      h("span", {}, ` page ${page + 1} `),
      h("button", { type: "button", disabled: !hasNext, onclick: () => ((page += 1), void load()) }, "Next →"),
    );
    if (sessions.length === 0) {
      replaceChildren(list, h("p", { class: "empty" }, "No sessions."), pager);
      return;
    }
    const table = h(
      "table",
      { class: "sessions-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...[
            "Session",
            "Agent",
            "Turns",
            "Head",
            "Updated",
            "Expires",
            "TTL",
            "Labels",
            "Conversation",
            "Tokens",
            "",
          ].map((t) => h("th", {}, t)),
        ),
      ),
    );
    const body = h("tbody");
    for (const session of sessions) body.append(...sessionRows(ctx, session, load));
    table.append(body);
    replaceChildren(list, table, pager);
  };

  append(root, h("h2", {}, "Sessions"), form, list);
  void load();
  return root;
}

/** A session's row, and the (hidden) row of its edit and delete forms. */
function sessionRows(ctx: AppContext, session: SessionInfo, reload: () => Promise<void>): HTMLElement[] {
  const panel = h("td", { colspan: 11 });
  const panelRow = h("tr", { class: "row-panel", hidden: true }, panel);
  const show = (content: HTMLElement): void => {
    replaceChildren(panel, content);
    panelRow.hidden = false;
  };
  const row = h(
    "tr",
    { "data-session-id": session.sessionId },
    h("td", {}, ctx.link({ view: "session", sessionId: session.sessionId }, session.sessionId, { class: "mono" })),
    h("td", {}, session.agent),
    h("td", { class: "num" }, session.turnCount),
    h("td", {}, statusBadge(session.headStatus)),
    h("td", {}, formatTime(session.updatedAt)),
    h("td", {}, formatTime(session.expiresAt)),
    h("td", {}, formatDuration(session.ttlMs)),
    h("td", { class: "labels" }, formatLabels(session.labels)),
    conversationCell(ctx, session),
    h("td", { class: "num tokens" }, session.usage ? String(session.usage.totalTokens) : "—"),
    h(
      "td",
      { class: "actions" },
      h("button", { type: "button", onclick: () => show(editForm(ctx, session, reload)) }, "Edit"),
      h(
        "button",
        { type: "button", class: "danger", onclick: () => show(deleteConfirm(ctx, session, reload)) },
        "Delete",
      ),
    ),
  );
  return [row, panelRow];
}

/** The label and TTL form of a session: set labels, remove labels, a new TTL or none. */
function editForm(ctx: AppContext, session: SessionInfo, reload: () => Promise<void>): HTMLElement {
  const setLabels = h("input", { name: "set-labels", placeholder: "key=value, …", size: 24 });
  const removeLabels = h("input", { name: "remove-labels", placeholder: "key, …", size: 16 });
  const ttl = h("input", {
    name: "ttl",
    placeholder: "unchanged (e.g. 2h; none = no expiry)",
    size: 28,
  });
  const status = h("span", { class: "form-status" });
  const form = h(
    "form",
    { class: "edit-session" },
    h("label", {}, "Set labels ", setLabels),
    h("label", {}, "Remove labels ", removeLabels),
    h("label", {}, "TTL ", ttl),
    h("button", { type: "submit" }, "Save"),
    status,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const ttlText = ttl.value.trim();
        await ctx.connection.client.updateSession(session.sessionId, {
          setLabels: parseLabels(setLabels.value),
          removeLabels: removeLabels.value
            .split(",")
            .map((k) => k.trim())
            .filter((k) => k !== ""),
          ...(ttlText === "" ? {} : { ttlMs: ttlText === "none" ? null : parseDuration(ttlText) }),
        });
        await reload();
      } catch (err) {
        replaceChildren(status, errorBox(err));
      }
    })();
  });
  return form;
}

/** The inline confirmation of a deletion. */
function deleteConfirm(ctx: AppContext, session: SessionInfo, reload: () => Promise<void>): HTMLElement {
  const status = h("span", { class: "form-status" });
  return h(
    "div",
    { class: "confirm-delete" },
    h(
      "span",
      {},
      "Delete session ",
      h("code", {}, session.sessionId),
      " and all its snapshots? This cannot be undone. ",
    ),
    h(
      "button",
      {
        type: "button",
        class: "danger",
        onclick: () =>
          void ctx.connection.client
            .deleteSession(session.sessionId)
            .then(reload)
            .catch((err: unknown) => replaceChildren(status, errorBox(err))),
      },
      "Confirm delete",
    ),
    h("button", { type: "button", onclick: () => void reload() }, "Cancel"),
    status,
  );
}

/** The longest conversation summary shown in the list, in characters. */
const SUMMARY_CHARS = 80;

/**
 * What a session is about: its `title` label when it has one, else its first
 * user message (read from the head snapshot after the row is drawn), cut to
 * {@link SUMMARY_CHARS} characters.
 */
function conversationCell(ctx: AppContext, session: SessionInfo): HTMLElement {
  const cell = h("td", { class: "conversation" });
  const show = (text: string): void => {
    replaceChildren(cell, text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text);
  };
  const title = session.labels.title;
  if (title !== undefined) {
    show(title);
    return cell;
  }
  if (!session.headSnapshotId) return cell;
  void ctx.connection.client
    .getSnapshot(session.agent, { sessionId: session.sessionId }, { signal: ctx.signal })
    .then((snapshot) => {
      const first = snapshot.state?.messages.find((m) => m.role === "user");
      const text = first?.content
        .map((p) => p.text ?? "")
        .join("")
        .trim();
      show(text ? text : "—");
    })
    .catch(() => show("—"));
  return cell;
}
