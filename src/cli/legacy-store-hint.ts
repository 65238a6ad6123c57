import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { DEFAULT_STORE } from "./serve-config.js";

/** Where the file store of earlier agentd releases kept its sessions by default. */
const LEGACY_FILE_STORE = "./.agentd";

/**
 * Warns once at start when agentd runs on the default store (SQLite in
 * ./.agentd/agentd.db) while ./.agentd also holds a file store of an earlier
 * release (its `agentd-store.json` marker): those sessions are not served
 * until they are copied over. Logs nothing otherwise; never names a session.
 */
export function warnOfLegacyFileStore(storeUri: string, logger: Pick<Logger, "warn">): void {
  if (storeUri !== DEFAULT_STORE) return;
  if (!existsSync(resolve(process.cwd(), LEGACY_FILE_STORE, "agentd-store.json"))) return;
  logger.warn(
    { legacyStore: `file:${LEGACY_FILE_STORE}`, store: DEFAULT_STORE },
    `./.agentd holds a file store of an earlier agentd, which the default store (SQLite) does not read: ` +
      `copy it with "agentd copy-store file:${LEGACY_FILE_STORE} ${DEFAULT_STORE}" (the file store is retired: --store file: is refused)`,
  );
}
