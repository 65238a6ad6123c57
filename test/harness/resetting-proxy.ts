import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy to `127.0.0.1:targetPort` whose connections can all be reset at once (RST, like a flaky
 * network), cut for a while (every connection reset and every new one refused: an outage), or
 * silenced (a black hole: what is sent is taken and dropped, nothing is answered or closed, like a
 * connection a NAT or load balancer dropped without telling either end).
 */
export class ResettingProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private cut = false;
  private silent = false;
  port = 0;

  async start(targetPort: number): Promise<void> {
    this.server = createServer((client) => {
      if (this.cut) {
        client.on("error", () => undefined);
        client.resetAndDestroy();
        return;
      }
      if (this.silent) {
        this.swallow(client);
        return;
      }
      const upstream = connect(targetPort, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Resets every open connection; returns how many there were. */
  reset(): number {
    const open = this.sockets.size;
    for (const s of this.sockets) s.resetAndDestroy();
    return open;
  }

  /** An outage of `ms`: resets every open connection and refuses new ones until it ends. */
  async cutFor(ms: number): Promise<void> {
    this.cut = true;
    this.reset();
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.cut = false;
  }

  /** Silences every open connection and every new one (see the class); `close` ends them. */
  silence(): void {
    this.silent = true;
    for (const s of this.sockets) {
      s.unpipe();
      s.on("data", () => undefined);
    }
  }

  private swallow(client: Socket): void {
    this.sockets.add(client);
    client.on("close", () => this.sockets.delete(client));
    client.on("error", () => undefined);
    client.on("data", () => undefined);
  }

  async close(): Promise<void> {
    this.reset();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
