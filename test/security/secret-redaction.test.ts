import { APICallError } from "ai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mapProviderError } from "../../src/models/provider-errors.js";
import { scrubSecrets } from "../../src/models/secret-scrub.js";
import { redactStoreUri, redactUriCredentials } from "../../stores/redact-uri.js";

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
    ["the password of a mistyped scheme", "mongo://app:s3cr3t@db/agentd", "mongo://app:***@db/agentd"],
    ["the password behind a leading space", " mongodb://app:s3cr3t@db/agentd", " mongodb://app:***@db/agentd"],
    ["the password of a URI without a scheme", "app:s3cr3t@db/agentd", "app:***@db/agentd"],
    ["a password without a user name", "mongodb://:s3cr3t@db/agentd", "mongodb://:***@db/agentd"],
  ])("hides %s", (_name, uri, expected) => {
    expect(redactStoreUri(uri)).toBe(expected);
  });

  it("keeps URIs without secrets as they are", () => {
    for (const uri of ["memory:", "file:./.agentd", "mongodb://127.0.0.1:27017/agentd?collectionPrefix=t1_&w=majority"])
      expect(redactStoreUri(uri)).toBe(uri);
  });
});

describe("redactUriCredentials (start-up failures quoting a URI)", () => {
  it("hides the password of every URI in a message and keeps the rest", () => {
    expect(redactUriCredentials('cannot open "mongodb+srv://app:s3cr3t@db/x": no such host')).toBe(
      'cannot open "mongodb+srv://app:***@db/x": no such host',
    );
  });
});

describe("mapProviderError (the raw error a server fault's log line prints)", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  const providerError = (responseBody: string): APICallError =>
    new APICallError({
      message: "Bad Request",
      url: "http://127.0.0.1/v1/chat/completions",
      requestBodyValues: {},
      statusCode: 400,
      responseBody,
    });

  it("drops the raw error as cause when its response body quotes the configured key", () => {
    vi.stubEnv("OPENAI_API_KEY", "Zx9~od.Sh4ped~kV.0042");
    const mapped = mapProviderError(
      providerError('{"error":{"message":"bad request","param":"Zx9~od.Sh4ped~kV.0042"}}'),
      "openai/m",
    );
    expect(mapped.status).toBe("INVALID_ARGUMENT");
    expect(mapped.cause).toBeUndefined();
  });

  it("keeps the raw error as cause when it holds no key material", () => {
    vi.stubEnv("OPENAI_API_KEY", "Zx9~od.Sh4ped~kV.0042");
    const err = providerError('{"error":{"message":"bad request"}}');
    expect(mapProviderError(err, "openai/m").cause).toBe(err);
  });
});
