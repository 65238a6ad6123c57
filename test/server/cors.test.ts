import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["--cors-origin", "https://app.example.com"] });
});
afterAll(async () => {
  await server?.stop();
});

/** One HTTP/1.1 request as a browser would send it; resolves with status and headers. */
function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>(
    (resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: server.port, method, path, headers }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      });
      req.on("error", reject);
      req.end(body);
    },
  );
}

const RUN = "/agentd.v1.AgentService/Run";
const runBody = JSON.stringify({
  init: { agent: "assistant" },
  input: { message: { role: "ROLE_USER", content: [{ text: "hi" }] } },
});

describe("CORS (--cors-origin)", () => {
  it("answers a preflight from an allowed origin with the Connect and gRPC-Web methods and headers", async () => {
    const res = await send("OPTIONS", RUN, {
      Origin: "https://app.example.com",
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "content-type,connect-protocol-version",
    });
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example.com");
    expect(String(res.headers["access-control-allow-methods"])).toContain("POST");
    expect(String(res.headers["access-control-allow-headers"]).toLowerCase()).toContain("connect-protocol-version");
    expect(String(res.headers["access-control-allow-headers"]).toLowerCase()).toContain("x-grpc-web");
  });

  it("marks a call from an allowed origin readable and exposes the protocol headers", async () => {
    const res = await send(
      "POST",
      RUN,
      { Origin: "https://app.example.com", "Content-Type": "application/json" },
      runBody,
    );
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example.com");
    expect(String(res.headers["access-control-expose-headers"]).toLowerCase()).toContain("grpc-status");
    expect(JSON.parse(res.body).output.message.content[0].text).toBe("echo: hi");
  });

  it("adds nothing for another origin, so the browser blocks it", async () => {
    const res = await send(
      "POST",
      RUN,
      { Origin: "https://evil.example.com", "Content-Type": "application/json" },
      runBody,
    );
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
