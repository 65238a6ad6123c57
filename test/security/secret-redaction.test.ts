import { describe, expect, it } from "vitest";
import { scrubSecrets } from "../../src/models/secret-scrub.js";
import { redactStoreUri } from "../../stores/redact-uri.js";

describe("scrubSecrets (provider messages passed to callers)", () => {
  it.each([
    [
      "an OpenAI key",
      "Incorrect API key provided: sk-proj-abc123DEF456. See docs.",
      "Incorrect API key provided: [redacted]. See docs.",
    ],
    [
      "a masked key",
      "Incorrect API key provided: sk-ant-a*********************xyz9.",
      "Incorrect API key provided: [redacted].",
    ],
    ["a Google key", "API key not valid: AIzaSyD-abcdefghijklmnop1234", "API key not valid: [redacted]"],
    ["a bearer credential", "rejected Authorization: Bearer eyJhbGciOi.abc.def", "rejected Authorization: [redacted]"],
    [
      "a key in a query string",
      "GET /v1/models?key=AB12cd34&alt=sse failed",
      "GET /v1/models?key=[redacted]&alt=sse failed",
    ],
  ])("removes %s and keeps the rest of the message", (_name, text, expected) => {
    expect(scrubSecrets(text, [])).toBe(expected);
  });

  it("removes the configured key and any 6+ character piece of it, wherever it appears", () => {
    const key = "zq9-Secret-Value-777";
    expect(scrubSecrets(`key ${key} refused (ends in Value-777)`, [key])).toBe(
      "key [redacted] refused (ends in [redacted])",
    );
  });

  it("leaves ordinary provider messages alone", () => {
    const text =
      'model "gpt-4o-mini" failed with HTTP 429: Rate limit reached for requests per min (RPM): Limit 3, Used 3.';
    expect(scrubSecrets(text, ["sk-unrelated-key-123"])).toBe(text);
  });
});

describe("redactStoreUri (the start-up log line)", () => {
  it.each([
    [
      "a password",
      "mongodb://app:s3cr3t@db1:27017,db2:27017/agentd?replicaSet=rs0",
      "mongodb://app:***@db1:27017,db2:27017/agentd?replicaSet=rs0",
    ],
    [
      "secret query parameters",
      "mongodb://db/agentd?tls=true&tlsCertificateKeyFilePassword=hunter2&authMechanismProperties=AWS_SESSION_TOKEN:abc",
      "mongodb://db/agentd?tls=true&tlsCertificateKeyFilePassword=***&authMechanismProperties=***",
    ],
    ["a password with @ and : in it", "mongodb://u:p@ss:w@rd@db/agentd", "mongodb://u:***@db/agentd"],
  ])("hides %s", (_name, uri, expected) => {
    expect(redactStoreUri(uri)).toBe(expected);
  });

  it("keeps URIs without secrets as they are", () => {
    for (const uri of ["memory:", "file:./.agentd", "mongodb://127.0.0.1:27017/agentd?collectionPrefix=t1_&w=majority"])
      expect(redactStoreUri(uri)).toBe(uri);
  });
});
