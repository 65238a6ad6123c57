import { describe, expect, it } from "vitest";
import { redactStoreUri, redactUriCredentials } from "../../stores/redact-uri.js";

// What a store URI looks like in a log line (stores/redact-uri.ts): secrets replaced by ***.

describe("redactStoreUri", () => {
  it("leaves a URI without a password or query unchanged", () => {
    expect(redactStoreUri("mongodb://db.example:27017/agentd")).toBe("mongodb://db.example:27017/agentd");
    expect(redactStoreUri("file:./.agentd/snapshots")).toBe("file:./.agentd/snapshots");
  });

  it("replaces the password of the user info and keeps the user name", () => {
    expect(redactStoreUri("mongodb://agentd:s3cret@db.example:27017/agentd")).toBe(
      "mongodb://agentd:***@db.example:27017/agentd",
    );
  });

  it("redacts up to the last @ when the password holds an unencoded @", () => {
    expect(redactStoreUri("mongodb+srv://u:p@ss@w0rd@cluster.example/agentd")).toBe(
      "mongodb+srv://u:***@cluster.example/agentd",
    );
  });

  it("matches the scheme and user case-insensitively", () => {
    expect(redactStoreUri("MongoDB://Admin:pw@h/db")).toBe("MongoDB://Admin:***@h/db");
  });

  it("keeps the port of a host without user info", () => {
    expect(redactStoreUri("mongodb://h:27017/db")).toBe("mongodb://h:27017/db");
  });

  it("over-redacts rather than leaks when an @ follows the host's port (it may end a password)", () => {
    expect(redactStoreUri("mongodb://h:27017/db?x=1@y")).toBe("mongodb://h:***@y");
  });

  it("replaces the values of secret-looking query parameters and keeps the others in order", () => {
    expect(
      redactStoreUri(
        "mongodb://h/db?tls=true&tlsCertificateKeyFilePassword=pw&authMechanismProperties=AWS_SESSION_TOKEN:t&apiKey=k&w=majority",
      ),
    ).toBe(
      "mongodb://h/db?tls=true&tlsCertificateKeyFilePassword=***&authMechanismProperties=***&apiKey=***&w=majority",
    );
  });

  it("matches secret parameter names case-insensitively on the name only", () => {
    expect(redactStoreUri("mongodb://h/db?SECRET=a&appName=token")).toBe("mongodb://h/db?SECRET=***&appName=token");
  });

  it("keeps a parameter without a value as it is", () => {
    expect(redactStoreUri("mongodb://h/db?password&ssl=true")).toBe("mongodb://h/db?password&ssl=true");
  });

  it("redacts both the password and the query of one URI", () => {
    expect(redactStoreUri("mongodb://u:pw@h/db?token=t")).toBe("mongodb://u:***@h/db?token=***");
  });

  it("redacts a user name without a password whole (it may be a key): mongodb://APIKEY@host", () => {
    expect(redactStoreUri("mongodb://APIKEY0123456789@db.example:27017/agentd")).toBe(
      "mongodb://***@db.example:27017/agentd",
    );
    expect(redactStoreUri("mongodb+srv://k3y@cluster.example/agentd?w=majority")).toBe(
      "mongodb+srv://***@cluster.example/agentd?w=majority",
    );
    expect(redactStoreUri("mongodb://@h/db")).toBe("mongodb://***@h/db");
  });

  it("redacts the user info of every shape: no scheme, a mistyped scheme, blanks around it", () => {
    expect(redactStoreUri("APIKEY@h/db")).toBe("***@h/db");
    expect(redactStoreUri("u:pw@h/db")).toBe("u:***@h/db");
    expect(redactStoreUri("mongo://APIKEY@h/db")).toBe("mongo://***@h/db");
    expect(redactStoreUri("  mongodb://APIKEY@h/db  ")).toBe("  mongodb://***@h/db  ");
    expect(redactStoreUri("postgres://APIKEY@h/db")).toBe("postgres://***@h/db");
  });
});

describe("redactUriCredentials (free text quoting URIs)", () => {
  it("replaces the password of //user:password@ and the user of //user@, leaving other text alone", () => {
    expect(
      redactUriCredentials(
        'cannot reach "mongodb://u:pw@h/db" nor "mongodb://APIKEY@h2/db" (see https://docs.example/x)',
      ),
    ).toBe('cannot reach "mongodb://u:***@h/db" nor "mongodb://***@h2/db" (see https://docs.example/x)');
  });
});
