import type { AgentInit, AgentOutput, SessionState } from "../client/browser.js";
import { userText } from "../client/browser.js";
import type { AppContext } from "./app-context.js";
import { messageCard } from "./content-view.js";
import { append, h, replaceChildren } from "./element.js";
import { describeError, errorBox, statusBadge } from "./format.js";
import { chunkLine } from "./live-view.js";

/**
 * The chat panel: pick an agent and a session (empty: a new one), type a
 * message, and each turn runs as one server-streaming RunStream (so it works
 * over HTTP/1.1 too): the streamed model text as it arrives, every other
 * chunk as a line, then the turn's TurnEnd. Server-managed agents continue
 * the session by ID; client-managed ones by the state the last turn returned
 * (kept in this view only). "Detach" hands the turn to the server's
 * background work and links to its live view.
 */
export function chatView(ctx: AppContext, initial: { agent?: string; sessionId?: string }): HTMLElement {
  const agentSelect = h("select", { name: "agent" }, ...ctx.agents.map((a) => h("option", { value: a.name }, a.name)));
  if (initial.agent) agentSelect.value = initial.agent;
  const sessionInput = h("input", {
    name: "session",
    placeholder: "new session",
    size: 40,
    value: initial.sessionId ?? "",
  });
  const message = h("textarea", { name: "message", rows: 3, cols: 60, placeholder: "Message", required: true });
  const detach = h("input", { type: "checkbox", name: "detach" });
  const send = h("button", { type: "submit" }, "Send");
  const transcript = h("div", { class: "transcript", "aria-live": "polite" });
  const history = h("section", { class: "history", "aria-label": "Earlier in this session" });
  let clientState: SessionState | undefined;
  const showHistory = (): void => {
    const agent = ctx.agents.find((a) => a.name === agentSelect.value);
    const sessionId = sessionInput.value.trim();
    if (!agent || agent.stateManagement === "client" || sessionId === "") {
      replaceChildren(history);
      return;
    }
    void sessionHistory(ctx, agent.name, sessionId).then((content) => replaceChildren(history, content));
  };

  const form = h(
    "form",
    { class: "chat-form" },
    h("label", {}, "Agent ", agentSelect),
    h("label", {}, "Session ", sessionInput),
    message,
    h("label", { class: "inline" }, detach, " detach (run in the background)"),
    send,
  );
  agentSelect.addEventListener("change", () => {
    sessionInput.value = "";
    clientState = undefined;
    replaceChildren(history);
  });
  sessionInput.addEventListener("change", () => {
    replaceChildren(transcript);
    showHistory();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = message.value;
    if (text.trim() === "") return;
    const agent = ctx.agents.find((a) => a.name === agentSelect.value);
    if (!agent) return;
    const sessionId = sessionInput.value.trim();
    const source: AgentInit =
      agent.stateManagement === "client" ? (clientState ? { state: clientState } : {}) : sessionId ? { sessionId } : {};
    send.disabled = true;
    message.value = "";
    void runTurn(ctx, agent.name, text, detach.checked, source, transcript)
      .then((output) => {
        if (!output) return;
        if (output.sessionId) sessionInput.value = output.sessionId;
        if (output.state) clientState = output.state;
      })
      .finally(() => (send.disabled = false));
  });

  showHistory();
  return h("section", { class: "chat", "aria-label": "Chat" }, h("h2", {}, "Chat"), form, history, transcript);
}

/**
 * The conversation so far of a server-managed session (its latest snapshot's
 * messages), shown before the turns this page runs; an error box when it
 * cannot be read (e.g. NOT_FOUND for another owner's session).
 */
async function sessionHistory(ctx: AppContext, agent: string, sessionId: string): Promise<HTMLElement> {
  try {
    const snapshot = await ctx.connection.client.getSnapshot(agent, { sessionId }, { signal: ctx.signal });
    const messages = snapshot.state?.messages ?? [];
    return h(
      "div",
      {},
      h(
        "h3",
        {},
        `Earlier in this session (${messages.length} message${messages.length === 1 ? "" : "s"}, turn ${snapshot.turnIndex}, `,
        statusBadge(snapshot.status),
        ")",
      ),
      h("div", { class: "messages" }, ...messages.map(messageCard)),
    );
  } catch (err) {
    return errorBox(err);
  }
}

/** Runs one turn by RunStream, appending its input, stream and end to `transcript`; undefined when the call failed. */
async function runTurn(
  ctx: AppContext,
  agent: string,
  text: string,
  detach: boolean,
  source: AgentInit,
  transcript: HTMLElement,
): Promise<AgentOutput | undefined> {
  const reply = h("div", { class: "part-text streaming" });
  const chunks = h("div", { class: "chunk-log" });
  const turn = h(
    "article",
    { class: "turn" },
    h("div", { class: "message", "data-role": "user" }, h("span", { class: "role" }, "user"), h("div", {}, text)),
    h("div", { class: "message", "data-role": "model" }, h("span", { class: "role" }, "model"), reply),
    chunks,
  );
  append(transcript, turn);
  try {
    const run = ctx.connection.client.runStream(agent, { message: userText(text), detach }, source, {
      signal: ctx.signal,
    });
    for await (const chunk of run) {
      if (chunk.modelChunk) append(reply, chunk.modelChunk.content.map((p) => p.text ?? "").join(""));
      else append(chunks, chunkLine(chunk));
    }
    const output = await run;
    append(turn, outputLine(ctx, output));
    return output;
  } catch (err) {
    append(turn, h("p", { class: "error", role: "alert" }, describeError(err)));
    return undefined;
  }
}

function outputLine(ctx: AppContext, output: AgentOutput): HTMLElement {
  const line = h("p", { class: "turn-output" }, "finish ", statusBadge(output.finishReason));
  if (output.error) append(line, ` ${output.error.status}: ${output.error.message}`);
  if (output.sessionId) {
    append(
      line,
      " · ",
      ctx.link(
        output.snapshotId
          ? { view: "session", sessionId: output.sessionId, snapshotId: output.snapshotId }
          : { view: "session", sessionId: output.sessionId },
        output.finishReason === "detached" ? "watch the detached work →" : "open the snapshot →",
      ),
    );
  }
  return line;
}
