import * as http2 from "node:http2";

/** How a raw gRPC call went: its grpc-status and message once it ended, or that it is still streaming. */
export interface RawGrpcCall {
  /** Resolves once the first response message arrived (the call is streaming), or the call ended. */
  answered: Promise<void>;
  /** Resolves with the grpc-status and grpc-message when the call ends (a closed stream without one: status -1). */
  ended: Promise<{ status: number; message: string }>;
  /** Status of a call that already ended, else undefined (still open). */
  status(): number | undefined;
}

/** An HTTP/2 connection of its own (one TCP connection), for calls over it; `closed` resolves when the server closes it. */
export interface RawConnection {
  session: http2.ClientHttp2Session;
  closed: Promise<void>;
  /** A gRPC call with an empty request message (Health/Watch, ListAgents...), with `authorization: Bearer token` when given. */
  call(path: string, token?: string): RawGrpcCall;
  close(): void;
}

/** Opens one HTTP/2 (h2c) connection to `baseUrl` and waits until it is connected (or failed). */
export async function openRawConnection(baseUrl: string): Promise<RawConnection> {
  const session = http2.connect(baseUrl);
  session.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => session.once("close", resolve));
  await Promise.race([new Promise<void>((resolve) => session.once("connect", () => resolve())), closed]);
  return {
    session,
    closed,
    close: () => session.destroy(),
    call(path, token) {
      let status: number | undefined;
      let message = "";
      let markAnswered!: () => void;
      const answered = new Promise<void>((resolve) => (markAnswered = resolve));
      const ended = new Promise<{ status: number; message: string }>((resolve) => {
        const finish = (): void => {
          status ??= -1;
          markAnswered();
          resolve({ status, message });
        };
        if (session.closed || session.destroyed) return finish();
        const headers: http2.OutgoingHttpHeaders = {
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        };
        let stream: http2.ClientHttp2Stream;
        try {
          stream = session.request(headers);
        } catch {
          return finish();
        }
        const read = (h: http2.IncomingHttpHeaders): void => {
          if (h["grpc-status"] !== undefined) {
            status = Number(h["grpc-status"]);
            message = decodeURIComponent(String(h["grpc-message"] ?? ""));
          }
        };
        stream.on("response", read);
        stream.on("trailers", read);
        stream.on("data", () => markAnswered());
        stream.on("error", () => undefined);
        stream.once("close", finish);
        stream.end(Buffer.alloc(5)); // an uncompressed, empty request message
      });
      return { answered, ended, status: () => status };
    },
  };
}
