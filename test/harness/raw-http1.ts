import { connect } from "node:net";

/** What came back on a raw HTTP/1 connection. */
export interface RawHttp1Answer {
  /** Everything the server wrote, as Latin-1 text. */
  text: string;
  /** The status code of the first response line, or 0 when none came. */
  status: number;
  /** True when the server closed the connection (false: the timeout ended the wait). */
  closed: boolean;
}

/**
 * Writes `request` (bytes exactly as given, nothing added) to a fresh TCP
 * connection to `port` on 127.0.0.1 and collects the answer until the server
 * closes the connection, `until` says the answer is complete, or `timeoutMs`
 * passes; then closes the connection.
 */
export function http1Exchange(
  port: number,
  request: string | Buffer,
  options: { timeoutMs?: number; until?: (text: string) => boolean } = {},
): Promise<RawHttp1Answer> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString("latin1");
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ text, status: status ? Number(status[1]) : 0, closed });
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5000);
    socket.on("connect", () => socket.write(request));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (options.until?.(Buffer.concat(chunks).toString("latin1"))) finish(false);
    });
    socket.on("error", () => finish(true));
    socket.on("close", () => finish(true));
  });
}

/** True once `text` holds a complete response with a Content-Length body (or a bodiless one). */
export function responseComplete(text: string): boolean {
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
  return length !== null && text.length - end - 4 >= Number(length[1]);
}
