import { hostname } from "node:os";

/**
 * The default name of this server instance, recorded with the detached work
 * it runs (which instance ran which part): `<hostname>:<pid>`.
 */
export function defaultInstanceId(): string {
  return `${hostname()}:${process.pid}`;
}
