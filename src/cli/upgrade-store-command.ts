import { resolve } from "node:path";
import { upgradeFormat2Store } from "../../stores/file/format-2-upgrade.js";
import { fileStoreUriPath, isFileStoreUri } from "../../stores/file-store-uri.js";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { migrateSchema } from "../../stores/sql/sql-migrations.js";
import { isSqlStoreUri, openSqlStore } from "../../stores/sql/sql-store-uri.js";

/** Usage of `agentd upgrade-store`. */
export const UPGRADE_STORE_USAGE = `Usage: agentd upgrade-store <directory | file:directory>
       agentd upgrade-store <sqlite:file | postgres://…>

Converts a file store written by an older agentd (store format 2) to the format this agentd
reads (3), in place, with every tenant directory below it. Stop every agentd using the store
first. Safe to run again if it is interrupted.

For an SQL store (sqlite:, postgres://), applies the schema migrations this agentd brings
(agentd also applies them when it opens the store), each in its own transaction.
`;

/** The directory a `file:` store URI or a plain path names. */
function storeDirectory(arg: string): string {
  return resolve(process.cwd(), isFileStoreUri(arg) ? fileStoreUriPath(arg) : arg.trim());
}

/**
 * `agentd upgrade-store <dir>`: converts a format-2 file store to format 3
 * (`upgradeFormat2Store`) and prints what it converted. Resolves to the exit
 * code: 0 when done, 2 (with one line on stderr) for a usage error or a store
 * it cannot convert.
 */
export async function upgradeStoreCommand(args: readonly string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(UPGRADE_STORE_USAGE);
    return 0;
  }
  if (args.length !== 1 || args[0]!.startsWith("-")) {
    process.stderr.write(`agentd: upgrade-store takes one store directory\n${UPGRADE_STORE_USAGE}`);
    return 2;
  }
  if (isSqlStoreUri(args[0]!)) return upgradeSqlStore(args[0]!);
  const dir = storeDirectory(args[0]!);
  try {
    const done = await upgradeFormat2Store(dir);
    const where = done.directories.length === 0 ? "nothing to convert" : `${done.directories.length} directories`;
    process.stdout.write(
      `agentd: ${dir} is store format 3 (${where}; ${done.sessions} sessions and ${done.records} snapshots converted)\n`,
    );
    return 0;
  } catch (err) {
    process.stderr.write(`agentd: upgrade-store: ${(err as Error).message}\n`);
    return 2;
  }
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
