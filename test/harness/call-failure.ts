import { ConnectError } from "@connectrpc/connect";

/** The ConnectError a call ends with; throws (failing the test) when the call succeeds. */
export async function failure(call: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await call();
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded");
}
