import { isFileStoreUri } from "../../stores/file-store-uri.js";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { retiredFileStoreMessage } from "./retired-file-store.js";
import { migrateSchema } from "../../stores/sql/sql-migrations.js";
import { isSqlStoreUri, openSqlStore } from "../../stores/sql/sql-store-uri.js";

/** Usage of `agentd upgrade-store`. */
export const UPGRADE_STORE_USAGE = `Usage: agentd upgrade-store <sqlite:file | postgres://…>

Applies the schema migrations this agentd brings to an SQL store (sqlite:, postgres://; agentd
also applies them when it opens the store), each in its own transaction.

A file store (a directory, file:<dir>) of any earlier agentd, store format 2 or 3, is not
upgraded: copy it into SQLite with "agentd copy-store file:<dir> sqlite:<dir>/agentd.db".
`;

/**
 * `agentd upgrade-store <sqlite:file | postgres://…>`: applies the SQL
 * store's pending schema migrations. Resolves to the exit code: 0 when done,
 * 2 (with one line on stderr) for a usage error, a file store (which it
 * points to copy-store) or a store it cannot open.
 */
export async function upgradeStoreCommand(args: readonly string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(UPGRADE_STORE_USAGE);
    return 0;
  }
  if (args.length !== 1 || args[0]!.startsWith("-")) {
    process.stderr.write(`agentd: upgrade-store takes one store URI\n${UPGRADE_STORE_USAGE}`);
    return 2;
  }
  const uri = args[0]!.trim();
  if (isSqlStoreUri(uri)) return upgradeSqlStore(uri);
  if (isFileStoreUri(uri) || !uri.includes(":")) {
    process.stderr.write(
      `agentd: upgrade-store: ${retiredFileStoreMessage("the store", isFileStoreUri(uri) ? uri : `file:${uri}`)}\n`,
    );
    return 2;
  }
  process.stderr.write(
    `agentd: upgrade-store: ${redactStoreUri(uri)} is not an SQL store URI (sqlite:<file>, postgres://…)\n`,
  );
  return 2;
}

/** Applies the SQL store's pending schema migrations and prints the versions; 2 on failure. */
async function upgradeSqlStore(uri: string): Promise<number> {
  let store: Awaited<ReturnType<typeof openSqlStore>> | undefined;
  try {
    store = await openSqlStore(uri);
    const before = await migrateSchema(store.engine);
    const after = (await store.engine.reader.query("SELECT MAX(version) AS version FROM agentd_schema"))[0]?.version;
    process.stdout.write(`agentd: ${redactStoreUri(uri)} is at schema version ${String(after)} (was ${before})\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`agentd: upgrade-store: ${(err as Error).message}\n`);
    return 2;
  } finally {
    await store?.close().catch(() => undefined);
  }
}
