import { toConnectError } from "../error-mapping.js";
import type { CredentialCheck } from "./credential-recheck.js";
import { endedBy } from "../ended-by.js";

/** How often an open stream's credential is re-checked by default: the detached work's heartbeat (5 s). */
export const DEFAULT_STREAM_RECHECK_MS = 5_000;

/**
 * `source` (the responses of a streaming call) re-checking its credential
 * with `check` every `intervalMs` while it is open, whether or not anything
 * is streaming: once the check fails (the token was revoked, or has
 * expired), the stream ends with the check's error (UNAUTHENTICATED) at the
 * caller's next read, and `source` is returned (its work released). A check
 * that is still running when the next one is due is not started twice. The
 * timer never keeps the process alive and stops when the stream ends.
 */
export function recheckWhileOpen<T>(
  source: AsyncIterable<T>,
  check: CredentialCheck,
  intervalMs: number,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = source[Symbol.asyncIterator]();
      let fail: ((err: unknown) => void) | undefined;
      const refused = new Promise<never>((_, reject) => {
        fail = reject;
      });
      let checking = false;
      let stopped = false;
      const timer = setInterval(() => {
        if (checking || stopped) return;
        checking = true;
        new Promise<void>((resolve) => resolve(check())).then(
          () => {
            checking = false;
          },
          (err: unknown) => {
            checking = false;
            stop();
            fail?.(toConnectError(err));
          },
        );
      }, intervalMs);
      timer.unref();
      const stop = (): void => {
        stopped = true;
        clearInterval(timer);
      };
      return endedBy(inner, refused, stop);
    },
  };
}
