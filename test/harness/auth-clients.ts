import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";

/** An interceptor sending `authorization: Bearer <token>`. */
export function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** A generated AgentService client sending `token` (none when undefined), over gRPC or Connect (HTTP/1.1). */
export function clientWithToken(
  baseUrl: string,
  token: string | undefined,
  protocol: "grpc" | "connect-h1" = "grpc",
): Client<typeof AgentService> {
  const interceptors = token === undefined ? [] : [bearer(token)];
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, interceptors })
      : createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
  return createClient(AgentService, transport);
}

/** Writes a tokens file (`TOKEN TENANT [SUBJECT]` lines) into a fresh temp directory; returns its path. */
export function writeTokensFile(lines: readonly string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), "agentd-tokens-")), "tokens");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}
