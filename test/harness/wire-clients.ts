import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";

/** The wire protocols agentd serves on its one port. */
export type WireProtocol = "grpc" | "connect-h2" | "connect-h1" | "grpc-web-h1";

/** A generated AgentService client for one protocol against `baseUrl`. */
export function agentServiceClient(baseUrl: string, protocol: WireProtocol): Client<typeof AgentService> {
  return createClient(AgentService, transportFor(baseUrl, protocol));
}

/** The connect-node transport for a protocol (HTTP/2 cleartext for gRPC and connect-h2, HTTP/1.1 otherwise). */
export function transportFor(baseUrl: string, protocol: WireProtocol): Transport {
  switch (protocol) {
    case "grpc":
      return createGrpcTransport({ baseUrl });
    case "connect-h2":
      return createConnectTransport({ baseUrl, httpVersion: "2" });
    case "connect-h1":
      return createConnectTransport({ baseUrl, httpVersion: "1.1" });
    case "grpc-web-h1":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  }
}
