import { Code, ConnectError } from "@connectrpc/connect";

/** The outcome as a lower-case status name: the RPC's status, or the status of a failed turn in a Run's output ("ok" otherwise). */
export async function outcomeOf(call: Promise<unknown>): Promise<string> {
  try {
    const res = (await call) as { output?: { error?: { status?: string } } };
    return (res.output?.error?.status ?? "ok").toLowerCase().replace(/_/g, "");
  } catch (err) {
    return Code[ConnectError.from(err).code]!.toLowerCase();
  }
}
