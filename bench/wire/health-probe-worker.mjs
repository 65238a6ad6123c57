// Worker thread of bench/wire/health-probe.ts: its own event loop and its own
// HTTP/2 connection, so the load the bench's main thread drives does not delay
// the probe's calls. Calls grpc.health.v1.Health/Check (service "", an empty
// request message) every `intervalMs` after the previous answer, one at a
// time, and posts each one's latency (ms) and whether it answered SERVING to
// the parent (after "ready": a first, uncounted Check opened the connection);
// on "stop" it closes the connection and posts "done". A call that fails
// posts { error }.
import { connect } from "node:http2";
import { performance } from "node:perf_hooks";
import { parentPort, workerData } from "node:worker_threads";

const { baseUrl, intervalMs } = workerData;
// A gRPC message frame: not compressed, length 0 (HealthCheckRequest with service "").
const EMPTY_REQUEST = Buffer.from([0, 0, 0, 0, 0]);
// HealthCheckResponse { status: SERVING (1) }: field 1, varint 1.
const SERVING = Buffer.from([0, 0, 0, 0, 2, 0x08, 0x01]);
const session = connect(baseUrl);
session.on("error", () => {});
let stopped = false;
parentPort.on("message", (message) => {
  if (message === "stop") stopped = true;
});

function check() {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Check",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const body = [];
    let grpcStatus;
    stream.on("data", (chunk) => body.push(chunk));
    stream.on("trailers", (trailers) => (grpcStatus = trailers["grpc-status"]));
    stream.on("error", reject);
    stream.on("end", () => {
      const answer = Buffer.concat(body);
      if (grpcStatus !== "0") reject(new Error(`health Check failed with grpc-status ${grpcStatus}`));
      else resolve(answer.equals(SERVING));
    });
    stream.end(EMPTY_REQUEST);
  });
}

try {
  await check(); // connects: not counted
  parentPort.postMessage("ready");
  while (!stopped) {
    const t0 = performance.now();
    const serving = await check();
    parentPort.postMessage({ ms: performance.now() - t0, serving });
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
} catch (err) {
  parentPort.postMessage({ error: String(err?.message ?? err) });
}
session.close();
parentPort.postMessage("done");
