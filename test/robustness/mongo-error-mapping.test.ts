import { describe, expect, it } from "vitest";
import {
  MongoClient,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
} from "mongodb";
import { clientOptionsFor, MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { isTransientMongoError, mongoError } from "../../stores/mongodb/mongo-errors.js";

function serverError(code: number, labels: string[] = []): MongoServerError {
  const err = new MongoServerError({ message: `code ${code}`, code, ok: 0 });
  for (const label of labels) err.addErrorLabel(label);
  return err;
}

describe("MongoDB error mapping", () => {
  it("maps every transient driver error to UNAVAILABLE", () => {
    const transient: unknown[] = [
      new MongoNetworkError("connection reset"),
      new MongoServerSelectionError("server selection timed out", { type: "Unknown", servers: new Map() } as never),
      new MongoNotConnectedError("not connected"),
      Object.assign(new Error("pool cleared"), { name: "MongoPoolClearedError" }),
      serverError(11600),
      serverError(11602),
      serverError(91),
      serverError(189),
      serverError(10107),
      serverError(13435),
      serverError(2, ["RetryableWriteError"]),
      serverError(2, ["TransientTransactionError"]),
      Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
    ];
    for (const err of transient) {
      expect([
        String((err as Error).name),
        (err as { code?: unknown }).code,
        mongoError(err, "reading").status,
      ]).toEqual([String((err as Error).name), (err as { code?: unknown }).code, "UNAVAILABLE"]);
    }
  });

  it("keeps other errors INTERNAL", () => {
    expect(isTransientMongoError(serverError(2))).toBe(false);
    expect(mongoError(serverError(11000), "writing").status).toBe("INTERNAL");
    expect(mongoError(new Error("boom"), "writing").status).toBe("INTERNAL");
  });

  it("lets driver options in the store URI win over the store's defaults", () => {
    expect(
      clientOptionsFor("mongodb://h/agentd?serverSelectionTimeoutMS=500").serverSelectionTimeoutMS,
    ).toBeUndefined();
    expect(
      clientOptionsFor("mongodb://h/agentd?serverselectiontimeoutms=500").serverSelectionTimeoutMS,
    ).toBeUndefined();
    expect(clientOptionsFor("mongodb://h/agentd").serverSelectionTimeoutMS).toBe(10_000);
    const client = new MongoClient(
      "mongodb://127.0.0.1:1/agentd?serverSelectionTimeoutMS=500",
      clientOptionsFor("mongodb://127.0.0.1:1/agentd?serverSelectionTimeoutMS=500"),
    );
    expect(client.options.serverSelectionTimeoutMS).toBe(500);
    const store = new MongoSessionStore({ uri: "mongodb://127.0.0.1:1/agentd?serverSelectionTimeoutMS=700" });
    expect((store as unknown as { client: MongoClient }).client.options.serverSelectionTimeoutMS).toBe(700);
    void store.close();
  });
});
