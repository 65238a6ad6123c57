import { startAgentd, type AgentdProcess } from "./agentd-process.js";

/** Options of {@link KillRestartLoop}. */
export interface KillRestartLoopOptions {
  /** agentd's arguments (its store, echo delay, ...); the loop adds `--port` to restart on the same port. */
  args: string[];
  /** Shortest time a server stays up (listening) before it is killed, in ms (default 2000). */
  minUpMs?: number;
  /** Longest time a server stays up before it is killed, in ms (default 4000). */
  maxUpMs?: number;
}

/** One SIGKILL of the loop and the restart after it. */
export interface KillRecord {
  /** When the SIGKILL was sent (ms since the epoch). */
  at: number;
  /** From the SIGKILL until the restarted server logged `agentd listening`, in ms. */
  downMs: number;
}

/**
 * An agentd process that is SIGKILLed and restarted on the same port over
 * and over (each incarnation up for a random 2–4 s, by default) while
 * clients talk to it: the crash half of issue 47. `start()` starts the first
 * incarnation; `run()` starts killing; `stop()` ends the loop with a server
 * up (for reading what the clients stored); `close()` stops that server.
 */
export class KillRestartLoop {
  /** Every kill so far, in order. */
  readonly kills: KillRecord[] = [];
  private server: AgentdProcess | undefined;
  private port = 0;
  private running: Promise<void> | undefined;
  private stopping = false;
  private wake: (() => void) | undefined;

  constructor(private readonly options: KillRestartLoopOptions) {}

  /** The base URL the clients use (stable across restarts). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `host:port` for gRPC dialers. */
  get target(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts the first incarnation (on a free port, which later ones reuse). */
  async start(): Promise<void> {
    this.server = await startAgentd({ args: this.options.args });
    this.port = this.server.port;
  }

  /** Starts killing and restarting in the background. */
  run(): void {
    this.running ??= this.loop();
  }

  /** Ends the loop; resolves once a server is up again (the last one is left running). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.running;
  }

  /** Stops the loop and the server. */
  async close(): Promise<void> {
    await this.stop();
    await this.server?.stop("SIGKILL");
  }

  private async loop(): Promise<void> {
    const min = this.options.minUpMs ?? 2000;
    const max = this.options.maxUpMs ?? 4000;
    while (!this.stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, min + Math.random() * (max - min));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.stopping) return;
      const at = Date.now();
      await this.server?.stop("SIGKILL");
      this.server = await this.restart();
      this.kills.push({ at, downMs: Date.now() - at });
    }
  }

  /** Starts agentd on the loop's port, retrying while the port is still being released. */
  private async restart(): Promise<AgentdProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startAgentd({ args: [...this.options.args, "--port", String(this.port)] });
      } catch (err) {
        if (attempt >= 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
}
