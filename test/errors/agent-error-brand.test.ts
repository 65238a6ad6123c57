/**
 * AgentError is recognised across copies of agentd in one process: an agents
 * module that got a second copy (a CommonJS `require` that tsx compiles, next
 * to the CLI's ESM build) still has its errors mapped to their own codes.
 */
import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";

/** A second, separately evaluated copy of the module, as a second copy of the package would be. */
async function secondCopy(): Promise<typeof AgentError> {
  // A query string makes the module loader evaluate the file again, as a second package copy would be.
  const specifier: string = "../../src/errors/agent-error.ts?second-copy";
  const mod = (await import(/* @vite-ignore */ specifier)) as typeof import("../../src/errors/agent-error.js");
  return mod.AgentError;
}

describe("AgentError across copies of agentd", () => {
  it("loads a distinct class for the second copy (the premise of the tests below)", async () => {
    const Other = await secondCopy();
    expect(Other).not.toBe(AgentError);
    expect(Object.getPrototypeOf(new Other("NOT_FOUND", "x"))).not.toBe(AgentError.prototype);
  });

  it("is an instance of this copy's AgentError when another copy made it", async () => {
    const Other = await secondCopy();
    const err = new Other("PERMISSION_DENIED", "this API key was revoked");
    expect(err instanceof AgentError).toBe(true);
    expect(new AgentError("NOT_FOUND", "x") instanceof Other).toBe(true);
  });

  it("keeps the other copy's status and message through AgentError.from", async () => {
    const Other = await secondCopy();
    const err = new Other("FAILED_PRECONDITION", "set OPENAI_API_KEY");
    const mapped = AgentError.from(err);
    expect(mapped).toBe(err);
    expect(mapped.status).toBe("FAILED_PRECONDITION");
  });

  it("is not an instance for plain errors or look-alikes without the brand", () => {
    expect(new Error("x") instanceof AgentError).toBe(false);
    expect({ name: "AgentError", status: "NOT_FOUND", message: "x" } instanceof AgentError).toBe(false);
    const notObjects: unknown[] = [null, undefined, "AgentError", 42];
    for (const value of notObjects) expect(value instanceof AgentError).toBe(false);
  });

  it("leaves the brand out of the JSON form", () => {
    expect(JSON.parse(JSON.stringify(new AgentError("NOT_FOUND", "x")))).not.toHaveProperty("agentd.AgentError");
  });
});
