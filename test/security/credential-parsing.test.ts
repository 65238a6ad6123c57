import { describe, expect, it } from "vitest";
import { hostOfAuthority, isLoopbackHost } from "../../src/server/auth/loopback.js";
import { parseTokenFile, TokenFileError } from "../../src/server/auth/static-tokens.js";
import { bearerToken } from "../../src/server/auth/bearer-token.js";

const T = "0123456789abcdef-token";

describe("tokens files", () => {
  it("maps each token to its tenant and subject (default: the tenant), skipping comments and blank lines", () => {
    const principals = parseTokenFile(`# comment\n\n${T}1 acme billing\n  ${T}2\tglobex  \r\n`, "tokens");
    expect([...principals.values()]).toEqual([
      { subject: "billing", tenant: "acme", claims: {} },
      { subject: "globex", tenant: "globex", claims: {} },
    ]);
    expect([...principals.keys()].some((k) => k.includes(T))).toBe(false);
  });

  it.each([
    [`${T} a b c`, 'tokens line 1: expected "TOKEN TENANT [SUBJECT]", got 4 field(s)'],
    ["tooshort acme", "tokens line 1: the token is shorter than 16 characters"],
    [`${T} a\n${T} b`, "tokens line 2: the token is listed twice"],
  ])("refuses %j naming the line", (text, message) => {
    expect(() => parseTokenFile(text, "tokens")).toThrow(TokenFileError);
    expect(() => parseTokenFile(text, "tokens")).toThrow(message);
  });
});

describe("bearer tokens in headers", () => {
  it.each([
    ["Bearer abc.def", "abc.def"],
    ["bearer   abc", "abc"],
    ["Basic dXNlcjpwYXNz", undefined],
    ["Bearer", undefined],
    ["Bearer a b", undefined],
  ])("%j → %j", (value, token) => {
    expect(bearerToken(new Headers({ authorization: value }))).toBe(token);
  });
});

describe("loopback names (the Host check)", () => {
  it.each([
    ["localhost:50051", true],
    ["LOCALHOST.", true],
    ["app.localhost:8080", true],
    ["127.0.0.1:1", true],
    ["127.9.9.9", true],
    ["[::1]:50051", true],
    ["[::ffff:127.0.0.1]:80", true],
    ["attacker.example", false],
    ["localhost.attacker.example:80", false],
    ["127.0.0.1.attacker.example", false],
    ["10.0.0.1:50051", false],
    ["[::2]:1", false],
  ])("%s → %s", (authority, loopback) => {
    expect(isLoopbackHost(hostOfAuthority(authority))).toBe(loopback);
  });
});
