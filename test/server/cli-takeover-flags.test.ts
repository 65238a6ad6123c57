// `agentd serve --instance-id` (the name this instance records in the detached work it runs) and `--no-takeover`.
import { describe, expect, it } from "vitest";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";

function serveConfig(argv: string[]) {
  const command = parseCommandLine(["serve", ...argv], {});
  if (command.kind !== "serve") throw new Error("not serve");
  return command.config;
}

describe("--instance-id", () => {
  it("is unset by default (the runtime then uses <hostname>:<pid>)", () => {
    expect(serveConfig([]).instanceId).toBeUndefined();
  });

  it("takes 1 to 128 printable characters", () => {
    expect(serveConfig(["--instance-id", "pod-7:eu-west/1"]).instanceId).toBe("pod-7:eu-west/1");
    expect(serveConfig(["--instance-id", "x".repeat(128)]).instanceId).toBe("x".repeat(128));
  });

  it("refuses an empty name, spaces, control characters and more than 128 characters, naming the flag", () => {
    for (const bad of ["", "pod 7", "pod\t7", "x".repeat(129)]) {
      expect(() => serveConfig(["--instance-id", bad])).toThrow(UsageError);
      expect(() => serveConfig(["--instance-id", bad])).toThrow(/^--instance-id must be 1 to 128 printable characters/);
    }
  });
});

describe("--no-takeover", () => {
  it("takeover is on by default and off with --no-takeover", () => {
    expect(serveConfig([]).takeover).toBe(true);
    expect(serveConfig(["--no-takeover"]).takeover).toBe(false);
  });
});
