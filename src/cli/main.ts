import { readFileSync } from "node:fs";
import { parseCommandLine, USAGE, UsageError } from "./args.js";
import { startServe, type ServeInstance } from "./serve-command.js";
import { initCommand } from "./init-command.js";
import { upgradeStoreCommand } from "./upgrade-store-command.js";
import { copyStoreCommand } from "./copy-store-command.js";
import { redactUriCredentials } from "../../stores/redact-uri.js";
import { AGENTD_PACKAGE } from "./package-name.js";

/** Exit code for a start-up failure (bad flag, unreadable module, port in use, bad store). */
export const EXIT_STARTUP_FAILURE = 2;

function version(): string {
  // src/cli/main.ts in a checkout, dist/src/cli/main.js in an installed package.
  for (const path of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as {
        name?: string;
        version: string;
      };
      if (pkg.name === AGENTD_PACKAGE) return pkg.version;
    } catch {
      // not there: try the next level up
    }
  }
  return "unknown";
}

/** One line explaining a start-up failure, with the password of any URI it quotes hidden. */
function describeStartupError(err: unknown): string {
  return redactUriCredentials(startupErrorLine(err));
}

function startupErrorLine(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === "EADDRINUSE")
    return `port ${e.port} on ${e.address} is already in use; pick another with --port (0 = any free port)`;
  if (e?.code === "EADDRNOTAVAIL") return `cannot bind ${e.address}: no such local address; check --host`;
  if (e?.code === "EACCES" && e.syscall === "listen")
    return `not allowed to bind port ${e.port}; use a port above 1023`;
  if (err instanceof Error) return err.message.split("\n")[0];
  return String(err);
}

/** How long after --drain-ms the shutdown (closing the store, flushing telemetry) may take before the process exits 1 regardless. */
const FORCED_EXIT_MARGIN_MS = 5_000;

/**
 * Runs the agentd CLI: `agentd serve ...` starts the server and keeps running
 * until SIGTERM/SIGINT, then shuts down gracefully and exits 0 (a second
 * signal exits 1 at once; a shutdown still running 5 s after --drain-ms
 * exits 1). Start-up failures print one line to stderr and
 * exit 2. `agentd upgrade-store <sqlite:… | postgres://…>` applies SQL schema migrations (see
 * `upgradeStoreCommand`); `agentd copy-store <from> <to>` copies every session
 * between two stores (see `copyStoreCommand`); `agentd init [dir]` creates a project (see `initCommand`).
 */
export async function main(argv: readonly string[]): Promise<void> {
  if (argv[0] === "upgrade-store") process.exit(await upgradeStoreCommand(argv.slice(1)));
  if (argv[0] === "copy-store") process.exit(await copyStoreCommand(argv.slice(1)));
  if (argv[0] === "init") process.exit(await initCommand(argv.slice(1), version()));
  let command;
  try {
    command = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`agentd: ${redactUriCredentials(err.message)}\n`);
    process.exit(EXIT_STARTUP_FAILURE);
  }
  if (command.kind === "help") {
    process.stdout.write(USAGE);
    return;
  }
  if (command.kind === "version") {
    process.stdout.write(`${version()}\n`);
    return;
  }
  // Signal handlers go in before the server starts, so a signal that arrives
  // right after the listening line (or during start-up) is never missed.
  const drainMs = command.config.drainMs;
  let instance: ServeInstance | undefined;
  let signalled: NodeJS.Signals | undefined;
  const shutDown = (ready: ServeInstance, signal: NodeJS.Signals): void => {
    ready.logger.info({ signal, drainMs }, "agentd shutting down");
    // Whatever hangs (a store or trace collector that stopped answering), the process goes.
    const forcedExitMs = drainMs + FORCED_EXIT_MARGIN_MS;
    setTimeout(() => {
      ready.logger.error(
        { forcedExitMs },
        "shutdown did not finish within --drain-ms plus 5 s (closing the store or flushing telemetry hangs); exiting",
      );
      process.exit(1);
    }, forcedExitMs).unref();
    ready.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        ready.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      process.stderr.write(`agentd: second ${signal}: exiting without draining\n`);
      process.exit(1);
    }
    signalled = signal;
    if (instance) shutDown(instance, signal);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", () => instance?.reload());
  try {
    instance = await startServe(command.config);
  } catch (err) {
    process.stderr.write(`agentd: ${describeStartupError(err)}\n`);
    process.exit(EXIT_STARTUP_FAILURE);
  }
  if (signalled) shutDown(instance, signalled);
}

await main(process.argv.slice(2));
