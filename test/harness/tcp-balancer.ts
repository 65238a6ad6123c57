import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A loopback TCP load balancer for tests of several agentd instances behind
 * one address (what a gRPC-aware balancer does at connection level): each
 * new client connection goes to the next backend port in turn; a backend that
 * refuses (stopped, or draining: its port is closed) is skipped, and a
 * connection no backend accepts is closed. Existing connections stay on their
 * backend until either side closes them (an HTTP/2 GOAWAY then makes the
 * client open a new one, which lands on another backend).
 */
export class TcpBalancer {
  private server: Server | undefined;
  private next = 0;
  private readonly sockets = new Set<Socket>();
  /** Connections forwarded, per backend port. */
  readonly forwarded = new Map<number, number>();

  /** `backends`: the ports to spread connections over; the test may change the list at any time. */
  constructor(public backends: number[]) {}

  /** Starts listening on a free loopback port; resolves with it. */
  async start(): Promise<number> {
    this.server = createServer((client) => this.route(client));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    if (!address || typeof address === "string") throw new Error("balancer: no port");
    return address.port;
  }

  /** Stops listening and closes every connection. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private route(client: Socket): void {
    this.track(client);
    client.pause();
    const tries = [...this.backends];
    const start = this.next++;
    const attempt = (i: number): void => {
      if (i >= tries.length) {
        client.destroy();
        return;
      }
      const port = tries[(start + i) % tries.length]!;
      const upstream = connect({ host: "127.0.0.1", port });
      const refused = (): void => {
        upstream.destroy();
        attempt(i + 1);
      };
      upstream.once("error", refused);
      upstream.once("connect", () => {
        upstream.off("error", refused);
        this.forwarded.set(port, (this.forwarded.get(port) ?? 0) + 1);
        this.track(upstream);
        upstream.on("error", () => client.destroy());
        client.on("error", () => upstream.destroy());
        upstream.once("close", () => client.destroy());
        client.once("close", () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }
}
