import { describe, expect, it } from "vitest";
import { sanitizePathPrefix } from "../../stores/file/path-prefix.js";

// Tenant path prefixes of the file store (stores/file/path-prefix.ts): how a prefix becomes
// directory names below the store directory.

describe("sanitizePathPrefix", () => {
  it("splits a prefix on / and \\ into its segments", () => {
    expect(sanitizePathPrefix("tenants/acme\\eu")).toEqual(["tenants", "acme", "eu"]);
  });

  it("drops empty segments, so an absolute prefix becomes relative", () => {
    expect(sanitizePathPrefix("/etc//passwd/")).toEqual(["etc", "passwd"]);
    expect(sanitizePathPrefix("")).toEqual([]);
  });

  it('rejects "." and ".." segments with INVALID_ARGUMENT naming the prefix', () => {
    for (const prefix of ["a/./b", "..", "tenants/../other"]) {
      expect(() => sanitizePathPrefix(prefix), prefix).toThrow(
        expect.objectContaining({
          status: "INVALID_ARGUMENT",
          message: `path prefix ${JSON.stringify(prefix)} must not contain "." or ".." segments`,
        }),
      );
    }
  });

  it("keeps letters, digits, _ and - and a dot that does not lead its segment", () => {
    expect(sanitizePathPrefix("Acme_42-eu/v1.2")).toEqual(["Acme_42-eu", "v1.2"]);
  });

  it("percent-encodes a leading dot and every other character (UTF-8 bytes)", () => {
    expect(sanitizePathPrefix(".hidden/a b/ü:*")).toEqual(["%2Ehidden", "a%20b", "%C3%BC%3A%2A"]);
  });

  it("percent-encodes a byte below 0x10 as two hex digits", () => {
    expect(sanitizePathPrefix("a\tb\x01")).toEqual(["a%09b%01"]);
  });

  it("encodes the first character of a segment named like a layout entry, in any case", () => {
    expect(sanitizePathPrefix("records/Sessions/agentd-store.json")).toEqual([
      "%72ecords",
      "%53essions",
      "%61gentd-store.json",
    ]);
  });
});
