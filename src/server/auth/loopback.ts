import { isIPv4 } from "node:net";

/** The host part of an authority (`host[:port]`, `[v6]:port`), lower-cased. */
export function hostOfAuthority(authority: string): string {
  const value = authority.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(1, value.indexOf("]") === -1 ? undefined : value.indexOf("]"));
  const colons = value.split(":").length - 1;
  return colons === 1 ? value.slice(0, value.indexOf(":")) : value;
}

/**
 * True for names and addresses that only reach this machine: `localhost` and
 * `*.localhost`, 127.0.0.0/8, `::1` (also as `::ffff:127.x.x.x`).
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return isIPv4(v4) && v4.startsWith("127.");
}
