import { describe, expect, it } from "vitest";
import { formatTime } from "../../src/inspector/format.js";

describe("formatTime (the inspector's times)", () => {
  const ms = Date.UTC(2026, 10, 28, 4, 30, 12);

  it("names the zone: UTC", () => {
    expect(formatTime(ms, "UTC")).toBe("2026-11-28 04:30:12 UTC");
  });

  it("shows local time with its zone: Oslo in winter is GMT+1", () => {
    expect(formatTime(ms, "Europe/Oslo")).toBe("2026-11-28 05:30:12 GMT+1");
  });

  it("uses a 24-hour clock past noon and midnight as 00", () => {
    expect(formatTime(Date.UTC(2026, 0, 2, 0, 5, 0), "UTC")).toBe("2026-01-02 00:05:00 UTC");
    expect(formatTime(Date.UTC(2026, 0, 2, 23, 5, 0), "UTC")).toBe("2026-01-02 23:05:00 UTC");
  });

  it("is a dash when there is no time", () => {
    expect(formatTime(undefined)).toBe("—");
  });
});
