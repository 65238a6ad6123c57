/**
 * A fault-injecting loopback TCP proxy for client retry tests: it forwards
 * every connection to a target and resets the client connection (RST via
 * `socket.resetAndDestroy()`, i.e. SO_LINGER 0) either every N bytes of traffic
 * (with jitter) or once at a chosen point of the next exchange.
 *
 * From a test:
 *
 *   const proxy = new FaultProxy({ target: { host: "127.0.0.1", port }, resetEveryBytes: 4096 });
 *   const port = await proxy.start();
 *   proxy.arm("after-response");   // one fault at a chosen point
 *   proxy.resets;                  // resets done so far
 *
 * As a CLI (prints the port it listens on, then runs until killed):
 *
 *   tsx test/harness/fault-proxy.ts --target 127.0.0.1:8080 --reset-every-bytes 4096 [--jitter 0.5] [--port 0]
 *
 * The Go and Python clients' chaos tests use their own native proxies with the same behaviour.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { pathToFileURL } from "node:url";

/** Where a one-shot fault ({@link FaultProxy.arm}) hits the next exchange. */
export type FaultPoint =
  /** The next bytes the client sends are dropped and its connection reset: the server never sees the request. */
  | "before-request"
  /** The server's answer starts: `bytes` of it reach the client, then the connection is reset. */
  | "mid-response"
  /** The server's answer is held back (not forwarded) for `holdMs`, then the connection is reset: the server finished, the client saw nothing. */
  | "after-response";

/** How a {@link FaultProxy} behaves. */
export interface FaultProxyOptions {
  /** Where connections are forwarded to. */
  target: { host: string; port: number };
  /** Reset a connection once about this many bytes (both directions) went through it; 0 or absent: never. */
  resetEveryBytes?: number;
  /** Each threshold is `resetEveryBytes * (1 ± jitter * random)`; default 0.5. */
  jitter?: number;
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /**
   * After a reset, keep the server's side of the connection open this long (default 0): the
   * server then notices the drop late, as behind a load balancer that holds its backend
   * connection, and a reconnecting client meets its own old invocation still holding the session.
   */
  serverResetDelayMs?: number;
}

/** Options of one armed fault. */
export interface FaultOptions {
  /** For "mid-response": how many bytes of the answer reach the client before the reset (default 1). */
  bytes?: number;
  /** For "after-response": how long the answer is held back before the reset (default 300 ms). */
  holdMs?: number;
}

interface Link {
  client: Socket;
  upstream: Socket;
  bytes: number;
  threshold: number;
  dead: boolean;
  /** Set by `freezeAll()`: nothing is forwarded any more, both sockets stay open. */
  frozen: boolean;
}

interface ArmedFault extends Required<FaultOptions> {
  point: FaultPoint;
  /** Set once the fault started on a link (the request went through, for the response faults). */
  link?: Link;
  sent: number;
}

/** A loopback TCP proxy that resets client connections every N bytes or at chosen points, and counts the resets. */
export class FaultProxy {
  private readonly links = new Set<Link>();
  private server: Server | undefined;
  private armed: ArmedFault | undefined;
  private resetCount = 0;
  /** The port it listens on (after `start()`). */
  port = 0;
  /** Bytes between periodic resets (0: none); may be changed while running. */
  resetEveryBytes: number;

  /** Configures the proxy; call `start()` to listen. */
  constructor(private readonly options: FaultProxyOptions) {
    this.resetEveryBytes = options.resetEveryBytes ?? 0;
  }

  /** Resets done so far (periodic, armed and `resetAll()`). */
  get resets(): number {
    return this.resetCount;
  }

  /** Listens on 127.0.0.1 and resolves with the port. */
  async start(): Promise<number> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(this.options.port ?? 0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /** Arms one fault at `point` of the next exchange on any connection (replacing an armed one). */
  arm(point: FaultPoint, options: FaultOptions = {}): void {
    this.armed = { point, bytes: options.bytes ?? 1, holdMs: options.holdMs ?? 300, sent: 0 };
  }

  /** True while an armed fault has not hit yet. */
  get isArmed(): boolean {
    return this.armed !== undefined;
  }

  /** Resets every open connection now. */
  resetAll(): void {
    for (const link of this.links) this.reset(link);
  }

  /**
   * Every open connection stops forwarding, both ways, and stays open: what
   * a peer looks like when its host vanished (crashed, or its network path
   * dropped) without a FIN or an RST. When one side of a frozen connection
   * closes, the other is not told (nothing gets through); `close()` ends
   * both. Connections opened later are not frozen.
   */
  freezeAll(): void {
    for (const link of this.links) link.frozen = true;
  }

  /** Stops listening and resets the open connections. */
  async close(): Promise<void> {
    for (const link of this.links) this.destroy(link);
    await new Promise((resolve) => (this.server ? this.server.close(resolve) : resolve(undefined)));
  }

  private accept(client: Socket): void {
    const upstream = connect(this.options.target.port, this.options.target.host);
    const link: Link = { client, upstream, bytes: 0, threshold: this.nextThreshold(), dead: false, frozen: false };
    this.links.add(link);
    for (const s of [client, upstream]) {
      s.on("error", () => undefined);
      s.on("close", () => {
        if (!link.frozen) this.destroy(link);
      });
    }
    client.on("data", (data: Buffer) => this.fromClient(link, data));
    upstream.on("data", (data: Buffer) => this.fromServer(link, data));
  }

  private fromClient(link: Link, data: Buffer): void {
    if (link.dead || link.frozen) return;
    const fault = this.armed;
    if (fault?.point === "before-request") {
      this.armed = undefined;
      this.reset(link);
      return;
    }
    if (fault && !fault.link) fault.link = link; // the response faults hit the link that carried the request
    link.upstream.write(data);
    this.count(link, data.length);
  }

  private fromServer(link: Link, data: Buffer): void {
    if (link.dead || link.frozen) return;
    const fault = this.armed;
    if (fault?.link === link && fault.point === "mid-response") {
      const room = fault.bytes - fault.sent;
      link.client.write(data.subarray(0, room));
      fault.sent += Math.min(room, data.length);
      if (fault.sent >= fault.bytes) {
        this.armed = undefined;
        setTimeout(() => this.reset(link), 20); // let the forwarded bytes reach the client first
      }
      return;
    }
    if (fault?.link === link && fault.point === "after-response") {
      this.armed = undefined;
      link.upstream.pause(); // hold the answer back: the client sees nothing of it
      setTimeout(() => this.reset(link), fault.holdMs);
      return;
    }
    link.client.write(data);
    this.count(link, data.length);
  }

  private count(link: Link, bytes: number): void {
    if (this.resetEveryBytes <= 0) return;
    link.bytes += bytes;
    if (link.bytes >= link.threshold) this.reset(link);
  }

  private nextThreshold(): number {
    const jitter = this.options.jitter ?? 0.5;
    return Math.max(1, Math.round(this.resetEveryBytes * (1 + jitter * (2 * Math.random() - 1))));
  }

  private reset(link: Link): void {
    if (link.dead) return;
    this.resetCount++;
    link.dead = true;
    this.links.delete(link);
    link.client.resetAndDestroy();
    const delay = this.options.serverResetDelayMs ?? 0;
    if (delay > 0) setTimeout(() => link.upstream.destroy(), delay);
    else link.upstream.destroy();
  }

  private destroy(link: Link): void {
    if (link.dead) return;
    link.dead = true;
    this.links.delete(link);
    link.client.destroy();
    link.upstream.destroy();
  }
}

/** The CLI's options from argv (`--target host:port --reset-every-bytes N [--jitter J] [--port P]`). */
function parseArgs(argv: string[]): FaultProxyOptions {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const target = value("--target");
  const match = target ? /^(.+):(\d+)$/.exec(target) : null;
  if (!match) throw new Error("usage: fault-proxy --target host:port [--reset-every-bytes N] [--jitter J] [--port P]");
  return {
    target: { host: match[1]!, port: Number(match[2]) },
    resetEveryBytes: Number(value("--reset-every-bytes") ?? 0),
    jitter: Number(value("--jitter") ?? 0.5),
    port: Number(value("--port") ?? 0),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const proxy = new FaultProxy(parseArgs(process.argv.slice(2)));
  const port = await proxy.start();
  console.log(port);
  process.on("SIGINT", () => {
    console.error(`resets: ${proxy.resets}`);
    process.exit(0);
  });
}
