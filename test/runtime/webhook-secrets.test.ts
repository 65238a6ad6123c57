import { describe, expect, it } from "vitest";
import { parseWebhookSecrets } from "../../src/runtime/webhooks/webhook-secrets.js";
import { webhookConfig } from "../../src/cli/webhook-args.js";

const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const usage = (message: string) => new Error(message);
const duration = (_flag: string, raw: string) => Number.parseInt(raw, 10) * 1000;

describe("--webhook-secret-file", () => {
  it("reads one key per line, skipping blank lines and comments (several: rotation)", () => {
    const keys = parseWebhookSecrets(`# current\n${SECRET}\n\n${SECRET.replace("Bw", "CA")}\n`, "f");
    expect(keys.map((k) => k.length)).toEqual([32, 32]);
  });

  it("refuses a line that is not a whsec_ secret, naming the line but never its content", () => {
    const bad = "whsec_not*base64*at*all";
    expect(() => parseWebhookSecrets(`${SECRET}\n${bad}\n`, "secrets.txt")).toThrow(/secrets.txt line 2/);
    try {
      parseWebhookSecrets(`${bad}\n`, "secrets.txt");
    } catch (err) {
      expect((err as Error).message).not.toContain("not*base64");
    }
  });

  it("refuses a file without a secret", () => {
    expect(() => parseWebhookSecrets("\n# none\n", "f")).toThrow(/no webhook secret/);
  });
});

describe("--webhook-url", () => {
  it("needs --webhook-secret-file (every delivery is signed)", () => {
    expect(() => webhookConfig({ "webhook-url": "https://example.com/h" }, duration, usage)).toThrow(/go together/);
  });

  it("refuses a URL that is not http(s) or carries credentials", () => {
    const file = { "webhook-secret-file": "f" };
    expect(() => webhookConfig({ ...file, "webhook-url": "ftp://example.com/" }, duration, usage)).toThrow(/http\(s\)/);
    expect(() => webhookConfig({ ...file, "webhook-url": "https://u:p@example.com/" }, duration, usage)).toThrow(
      /credentials/,
    );
  });

  it("refuses the other webhook flags without --webhook-url", () => {
    expect(() => webhookConfig({ "webhook-allow-private": true }, duration, usage)).toThrow(/only applies/);
  });

  it("takes the timeout and retry period as durations", () => {
    const config = webhookConfig(
      {
        "webhook-url": "https://example.com/h",
        "webhook-secret-file": "f",
        "webhook-timeout": "2",
        "webhook-retry-period": "60",
      },
      duration,
      usage,
    );
    expect(config).toEqual({
      url: "https://example.com/h",
      secretFile: "f",
      allowPrivate: false,
      timeoutMs: 2000,
      retryPeriodMs: 60_000,
    });
  });
});
