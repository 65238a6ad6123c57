import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const PROJECT = join(dirname(fileURLToPath(import.meta.url)), "..", "mongo-java-server");
const MAIN_CLASS = "dev.agentd.testing.MongoJavaServerMain";
/**
 * The JVM's flags: deep stacks for the server's recursive query code, and a JVM made for short
 * runs beside other processes on a small machine. `TieredStopAtLevel=1` compiles with C1 alone
 * and the serial collector runs no GC threads: a test server lives for one test file, where C2's
 * compile threads cost more CPU than their faster code ever saves. Measured on three MongoDB test
 * files (4 servers): the JVMs' CPU time fell from 39.8 s to 17.9 s, the files' wall time from 65 s
 * to 55 s.
 */
const JVM_FLAGS = ["-Xss4m", "-Xmx1g", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds the launcher (`mvn -q package`, which also copies the dependency jars
 * to target/lib) unless target/ is newer than the sources and pom.xml. The first
 * build downloads mongo-java-server from Maven Central; later ones work offline.
 * Throws with Maven's output when the build fails.
 */
export function buildMongoJavaServer(): void {
  const marker = join(PROJECT, "target", "classes", ...MAIN_CLASS.split(".")) + ".class";
  const lib = join(PROJECT, "target", "lib");
  if (existsSync(marker) && existsSync(lib)) {
    const built = statSync(marker).mtimeMs;
    if (built >= newestMtime(join(PROJECT, "src")) && built >= statSync(join(PROJECT, "pom.xml")).mtimeMs) return;
  }
  const result = spawnSync("mvn", ["-q", "-B", "package", "-DskipTests"], { cwd: PROJECT, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(
      `building mongo-java-server failed (mvn exit ${result.status}):\n${result.stdout}\n${result.stderr}`,
    );
  }
}

/** How a {@link MongoJavaServer} presents itself (see test/mongo-java-server's AgentdTestBackend). */
export interface MongoJavaServerOptions {
  /**
   * Present the server as the primary of a one-member replica set of this name, so the driver
   * applies replica-set rules ($readPreference on the wire, step-down handling). Default: a
   * standalone server (reached with directConnection).
   */
  replicaSet?: string;
  /** False: answer `$changeStream` as a standalone mongod does (error 40573). Default true. */
  changeStreams?: boolean;
}

/**
 * A running mongo-java-server process (memory backend, oplog enabled) on 127.0.0.1. Besides
 * the wire protocol it answers the test hooks of test/mongo-java-server's AgentdTestBackend
 * (admin commands: agentdTestCloseChangeStreams, agentdTestOversizedChangeEvent,
 * {agentdTestStepDown: 1, ms}, {agentdTestWriteConcernError: 1, count, code}).
 */
export class MongoJavaServer {
  private child: ChildProcess | undefined;
  private boundPort = 0;
  private options: MongoJavaServerOptions = {};

  /** The port it listens on (kept across restarts). */
  get port(): number {
    return this.boundPort;
  }

  /**
   * Connection string for the driver, short server selection timeout: a direct connection to
   * a standalone server, or `replicaSet=<name>` for one started with `replicaSet`.
   */
  get uri(): string {
    const topology = this.options.replicaSet ? `replicaSet=${this.options.replicaSet}` : "directConnection=true";
    return `mongodb://127.0.0.1:${this.boundPort}/?${topology}&serverSelectionTimeoutMS=5000`;
  }

  /** Builds if needed, then starts it (on `port`, or a free port) and waits until it listens. */
  static async start(port = 0, options: MongoJavaServerOptions = {}): Promise<MongoJavaServer> {
    buildMongoJavaServer();
    const server = new MongoJavaServer();
    server.options = options;
    await server.launch(port);
    return server;
  }

  private async launch(port: number): Promise<void> {
    const classpath = [join(PROJECT, "target", "classes"), join(PROJECT, "target", "lib", "*")].join(":");
    const flags = [
      ...(this.options.replicaSet ? ["--replica-set", this.options.replicaSet] : []),
      ...(this.options.changeStreams === false ? ["--no-change-streams"] : []),
    ];
    const child = spawn("java", [...JVM_FLAGS, "-cp", classpath, MAIN_CLASS, String(port), ...flags], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    this.boundPort = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      const timer = setTimeout(
        () => reject(new Error(`mongo-java-server did not start within 60 s:\n${stderr}`)),
        60_000,
      );
      lines.on("line", (line) => {
        const match = /"port":(\d+)/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`mongo-java-server exited with ${code} before listening:\n${stderr}`));
      });
    });
  }

  /** Kills the process (SIGKILL: abrupt, like a crash) and waits for it to exit. Its in-memory data is lost. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }

  /** Stops it and starts a new, empty server on the same port. */
  async restart(): Promise<void> {
    const port = this.boundPort;
    await this.stop();
    for (let attempt = 0; ; attempt++) {
      try {
        await this.launch(port);
        return;
      } catch (err) {
        if (attempt >= 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 250)); // port still in TIME_WAIT/closing
      }
    }
  }
}

/**
 * The MongoDB to test against: `MONGODB_URI` when set (a real replica set;
 * nothing is started), else a fresh mongo-java-server. `stop` stops what was started.
 */
export async function mongoForTests(): Promise<{ uri: string; server?: MongoJavaServer; stop(): Promise<void> }> {
  const external = process.env.MONGODB_URI;
  if (external) return { uri: external, stop: async () => undefined };
  const server = await MongoJavaServer.start();
  return { uri: server.uri, server, stop: () => server.stop() };
}
