import { describe, expect, it } from "vitest";
import { StatusChannel } from "../../stores/status-channel.js";
import { StatusSubscribers } from "../../stores/status-subscribers.js";

// The registry every store's subscribeStatus fans observations out through (stores/status-subscribers.ts).

/** A channel subscribed to `snapshotId` that leaves `subscribers` when it closes, as the stores wire it. */
function subscribe(subscribers: StatusSubscribers, snapshotId: string): StatusChannel {
  const channel: StatusChannel = new StatusChannel(new AbortController().signal, () =>
    subscribers.remove(snapshotId, channel),
  );
  subscribers.add(snapshotId, channel);
  return channel;
}

describe("StatusSubscribers", () => {
  it("delivers an observation to every channel of its snapshot and to no other", () => {
    const subscribers = new StatusSubscribers();
    const a1 = subscribe(subscribers, "a");
    const a2 = subscribe(subscribers, "a");
    const b = subscribe(subscribers, "b");
    subscribers.deliver("a", { status: "completed", version: 1 });
    expect(a1.push({ status: "completed", version: 2 })).toBe(false); // already delivered
    expect(a2.push({ status: "completed", version: 2 })).toBe(false);
    expect(b.push({ status: "completed", version: 2 })).toBe(true);
  });

  it("counts channels and drops a snapshot ID when its last channel leaves", () => {
    const subscribers = new StatusSubscribers();
    const a1 = subscribe(subscribers, "a");
    const a2 = subscribe(subscribers, "a");
    expect(subscribers.size).toBe(2);
    a1.close();
    expect(subscribers.has("a")).toBe(true);
    a2.close();
    expect(subscribers.has("a")).toBe(false);
    expect(subscribers.isEmpty).toBe(true);
    expect([...subscribers.ids()]).toEqual([]);
  });

  it("closeAll ends every channel, which leaves the registry empty", async () => {
    const subscribers = new StatusSubscribers();
    const channels = [subscribe(subscribers, "a"), subscribe(subscribers, "a"), subscribe(subscribers, "b")];
    subscribers.closeAll();
    expect(channels.map((c) => c.isClosed)).toEqual([true, true, true]);
    expect(subscribers.isEmpty).toBe(true);
    for (const channel of channels) {
      const seen: string[] = [];
      for await (const status of channel) seen.push(status);
      expect(seen).toEqual([]);
    }
  });
});
