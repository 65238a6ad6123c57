import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/**
 * The directory of PostgreSQL's server programs (initdb, postgres):
 * `PG_BIN` when set, else the newest `/usr/lib/postgresql/<major>/bin`
 * (Debian's `postgresql` package; scripts/install-postgres.sh installs it).
 */
export function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = "/usr/lib/postgresql";
  const majors = existsSync(base)
    ? readdirSync(base)
        .filter((d) => existsSync(join(base, d, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0)
    throw new Error("PostgreSQL server programs not found: run `bash scripts/install-postgres.sh` (or set PG_BIN)");
  return join(base, majors[0]!, "bin");
}

/** PostgreSQL refuses to run as root: as root, the server runs as `nobody` (uid/gid 65534). */
function runAs(): { uid?: number; gid?: number } {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A real PostgreSQL server for tests: a fresh cluster (initdb, trust
 * authentication, C locale) in a temporary directory, listening on
 * 127.0.0.1 on a free port, run as an unprivileged user when the tests run
 * as root. Durability settings are relaxed (fsync off) unless `durable`:
 * the tests kill agentd, never this server.
 */
export class PostgresServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    /** The port it listens on. */
    readonly port: number,
  ) {}

  /** The URI of database `postgres` as superuser `postgres`, with `schema` when given. */
  uri(schema?: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres${schema ? `?schema=${schema}` : ""}`;
  }

  /** Creates a cluster and starts the server; resolves once it accepts connections. */
  static async start(options: { durable?: boolean } = {}): Promise<PostgresServer> {
    const bin = postgresBinDir();
    const dir = mkdtempSync(join(tmpdir(), "agentd-postgres-"));
    const user = runAs();
    if (user.uid !== undefined) chownSync(dir, user.uid, user.gid!);
    const data = join(dir, "data");
    const init = spawnSync(
      join(bin, "initdb"),
      ["-D", data, "-U", "postgres", "--auth=trust", "--locale=C", "--encoding=UTF8", "--no-sync"],
      { ...user, encoding: "utf8" },
    );
    if (init.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`initdb failed (exit ${init.status}): ${init.stderr || init.stdout}`);
    }
    const port = await freePort();
    const child = spawn(
      join(bin, "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
        "-k",
        dir,
        "-c",
        "listen_addresses=127.0.0.1",
        ...(options.durable ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
        "-c",
        "max_connections=200",
      ],
      { ...user, stdio: ["ignore", "ignore", "pipe"] },
    );
    let log = "";
    child.stderr!.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    const server = new PostgresServer(child, dir, port);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) {
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`postgres exited with ${child.exitCode}: ${log}`);
      }
      const client = new pg.Client({ connectionString: server.uri() });
      try {
        await client.connect();
        await client.end();
        return server;
      } catch {
        await client.end().catch(() => {});
        if (Date.now() > deadline) {
          await server.stop();
          throw new Error(`postgres did not accept connections within 60 s: ${log}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /** Stops the server (fast shutdown, then SIGKILL after 10 s) and removes its directory. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGINT");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let shared: Promise<PostgresServer> | undefined;
let users = 0;

/**
 * One PostgreSQL server per test process, shared by the files that ask for
 * it: `acquire` starts it on first use, `release` stops it when the last user
 * is done. Each test uses its own schema (`freshSchema`).
 */
export async function postgresForTests(): Promise<{ server: PostgresServer; release(): Promise<void> }> {
  users++;
  shared ??= PostgresServer.start();
  const server = await shared;
  return {
    server,
    release: async () => {
      if (--users > 0) return;
      const stopping = shared;
      shared = undefined;
      await (await stopping)?.stop();
    },
  };
}

let schemas = 0;
/** A schema name no other test of this run uses. */
export function freshSchema(prefix = "t"): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${++schemas}`;
}
