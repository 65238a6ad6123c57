import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DirectoryStatusWatcher } from "../../stores/file/status-watcher.js";
import { StatusChannel } from "../../stores/status-channel.js";
import { useTempDirs } from "./file-fixtures.js";

// The watcher of one records directory of the file store (stores/file/status-watcher.ts): whether
// it holds an OS watcher or poll timer (`active`), which the store counts as its open watchers.

const tempDir = useTempDirs("agentd-status-watcher-");

/** A channel subscribed to `snapshotId` that leaves `watcher` when it closes, as the file store wires it. */
function subscribe(watcher: DirectoryStatusWatcher, snapshotId: string): StatusChannel {
  const channel: StatusChannel = new StatusChannel(new AbortController().signal, () =>
    watcher.remove(snapshotId, channel),
  );
  watcher.add(snapshotId, channel);
  return channel;
}

describe("DirectoryStatusWatcher", () => {
  it("with polling disabled, is active while it watches the directory for a subscriber", async () => {
    const watcher = new DirectoryStatusWatcher(await tempDir(), { pollIntervalMs: 0 }, () => undefined);
    const channel = subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    channel.close();
    expect(watcher.active).toBe(false);
  });

  it("is active, polling, for a subscriber of a directory that cannot be watched", async () => {
    const missing = join(await tempDir(), "records"); // fs.watch fails with ENOENT
    const watcher = new DirectoryStatusWatcher(missing, { pollIntervalMs: 60_000 }, () => undefined);
    subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    watcher.closeAll();
    expect(watcher.active).toBe(false);
  });
});
