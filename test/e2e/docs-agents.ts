// The agents the docs pages call besides the examples ("assistant", "tasks"):
// test/e2e/readme-snippets.test.ts serves this module next to them, so the
// client pages' blocks run as written.
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineCustomAgent } from "../../src/runtime/agents/custom-agent.js";
import { messageText, type Message } from "../../src/types/content.js";

/**
 * The fixtures' client-managed note taker (docs: "Client-managed state") and
 * `flaky`, whose turns fail in-band on "fail" (docs: "Errors").
 */
export { flaky, notes } from "../fixtures/agents.js";
/** The prompt-agent fixtures' `bank`, whose `transfer` tool interrupts (docs: "An interrupting tool"). */
export { bank } from "../fixtures/prompt-agents.js";

/**
 * `shopper` (docs: "Cancel and steer a turn"): streams a word every 100 ms for
 * about three seconds, so a cancel or a steer finds the turn running; a steer
 * it takes ends the turn with `steered by: <texts>`, otherwise it replies
 * `shopping list for: <text>`. Honours its cancel signal.
 */
export const shopper = defineCustomAgent({
  name: "shopper",
  description: "Streams slowly; cancel and steer it (docs).",
  store: "default",
  turn: async (input, ctx) => {
    const taken: Message[] = [];
    for (let i = 0; i < 30 && taken.length === 0; i++) {
      await ctx.responder.sendModelChunk({ role: "model", content: [{ text: "… " }], index: 0 });
      await sleep(100, undefined, { signal: ctx.turn.signal });
      taken.push(...(ctx.turn.takeSteering?.() ?? []));
    }
    const text = taken.length
      ? `steered by: ${taken.map(messageText).join(", ")}`
      : `shopping list for: ${messageText(input.message)}`;
    await ctx.responder.sendModelChunk({ role: "model", content: [{ text }], index: 0 });
    ctx.session.addMessages({ role: "model", content: [{ text }] });
  },
});

const PlanSchema = z.object({ plan: z.array(z.object({ step: z.string(), done: z.boolean() })) });

/**
 * `planner` (docs: "Fork from an edited past"): its first turn writes a
 * three-step plan to custom state (`/plan/0` … `/plan/2`, none done); every
 * turn replies with the steps done so far, so an edit of the past shows.
 */
export const planner = defineCustomAgent<z.infer<typeof PlanSchema>>({
  name: "planner",
  description: "Keeps a three-step plan in custom state (docs).",
  store: "default",
  stateSchema: PlanSchema,
  turn: async (_input, ctx) => {
    if (!ctx.session.custom()) {
      ctx.session.updateCustom(() => ({
        plan: ["pack", "move", "unpack"].map((step) => ({ step, done: false })),
      }));
    }
    const done = ctx.session
      .custom()!
      .plan.filter((s) => s.done)
      .map((s) => s.step);
    const text = `done: ${done.join(", ") || "nothing yet"}`;
    await ctx.responder.sendModelChunk({ role: "model", content: [{ text }], index: 0 });
    ctx.session.addMessages({ role: "model", content: [{ text }] });
  },
});
