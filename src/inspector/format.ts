import { ConnectError } from "@connectrpc/connect";
import { Code } from "../client/browser.js";
import { h } from "./element.js";

/**
 * An epoch-ms time as `2026-11-28 05:30:12 GMT+1` in the browser's time zone
 * (or `timeZone`), the zone always named; `—` when absent.
 */
export function formatTime(ms: number | undefined, timeZone?: string): string {
  if (ms === undefined) return "—";
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  }).formatToParts(new Date(ms));
  const part = (type: Intl.DateTimeFormatPartTypes): string => parts.find((p) => p.type === type)?.value ?? "";
  return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}:${part("second")} ${part("timeZoneName")}`;
}

/** A duration in ms as `90s`, `15m`, `2h`, `3d` (the largest whole unit); `—` when absent. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return "—";
  const units: [string, number][] = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ];
  for (const [unit, size] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A badge for a snapshot status (`data-status` carries it for styling and tests). */
export function statusBadge(status: string): HTMLElement {
  return h("span", { class: "badge", "data-status": status }, status);
}

/** `key=value` pairs (comma or newline separated) as a record; throws a readable Error on a pair without `=`. */
export function parseLabels(raw: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of raw.split(/[,\n]/)) {
    const trimmed = pair.trim();
    if (trimmed === "") continue;
    const eq = trimmed.indexOf("=");
    if (eq <= 0) throw new Error(`"${trimmed}" is not a label: write key=value`);
    labels[trimmed.slice(0, eq).trim()] = trimmed.slice(eq + 1).trim();
  }
  return labels;
}

/** A record of labels as `key=value, …`. */
export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/** A duration typed by the user (`30s`, `15m`, `2h`, `7d`, or seconds) in ms; throws a readable Error otherwise. */
export function parseDuration(raw: string): number {
  const match = /^\s*(\d+)\s*(ms|s|m|h|d)?\s*$/.exec(raw);
  if (!match) throw new Error(`"${raw}" is not a duration: write e.g. 90s, 15m, 2h or 7d`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? "s"]!;
  return Number(match[1]) * factor;
}

/** A readable line for a failed call: the status name and the server's message. */
export function describeError(err: unknown): string {
  if (err instanceof ConnectError) return `${Code[err.code] ?? err.code}: ${err.rawMessage}`;
  return err instanceof Error ? err.message : String(err);
}

/** An error box showing {@link describeError}. */
export function errorBox(err: unknown): HTMLElement {
  return h("p", { class: "error", role: "alert" }, describeError(err));
}
