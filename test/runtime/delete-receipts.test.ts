import { describe, expect, it } from "vitest";
import { DeleteReceipts } from "../../src/runtime/sessions/delete-receipts.js";

const T0 = 1_700_000_000_000;

describe("DeleteReceipts", () => {
  it("answers a retried delete as the first call did, per owner and request ID", () => {
    const receipts = new DeleteReceipts({ kept: 32, ttlMs: 1000 });
    receipts.record("tenant", "req", "s1", true, T0);
    expect(receipts.answered("tenant", "req", "s1", T0 + 10)).toBe(true);
    expect(receipts.answered("other", "req", "s1", T0 + 10)).toBeUndefined();
    expect(receipts.answered("tenant", "req2", "s1", T0 + 10)).toBeUndefined();
  });

  it("forgets a receipt once the request-ID window has passed", () => {
    const receipts = new DeleteReceipts({ kept: 32, ttlMs: 1000 });
    receipts.record("", "req", "s1", true, T0);
    expect(receipts.answered("", "req", "s1", T0 + 1000)).toBeUndefined();
  });

  it("refuses a request ID reused for another session with INVALID_ARGUMENT", () => {
    const receipts = new DeleteReceipts();
    receipts.record("", "req", "s1", true, T0);
    expect(() => receipts.answered("", "req", "s2", T0)).toThrow(/already used to delete another session/);
  });
});
