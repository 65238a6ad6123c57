import { existsSync, mkdirSync } from "node:fs";
import { open, readdir, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  isClaimable,
  type WebhookClaimOptions,
  pageOfWebhookEvents,
  type WebhookAttemptUpdate,
  type WebhookEvent,
  type WebhookEventPage,
  type WebhookEventQuery,
  type WebhookOutbox,
} from "../webhook-outbox.js";
import { acquireFileLock } from "./file-lock.js";
import { syncDirectory } from "./directory-sync.js";

/** The outbox directory under the store root. */
export const WEBHOOK_DIR = "webhooks";

const EVENT_FILE = /^msg_[\w-]{1,200}\.json$/;

/**
 * The webhook outbox of the file store: one JSON file per event in
 * `<root>/webhooks/`, written to a temporary file, fsynced and renamed (a
 * reader sees the old or the new event, never a torn one). Every write and
 * claim holds the outbox's cross-process lock file (`.lock`), so processes
 * sharing the directory claim each event once. Cost: a claim, a listing and
 * the lag read every event file, O(events kept); `prune` keeps that bounded.
 */
export class FileWebhookOutbox implements WebhookOutbox {
  private readonly dir: string;

  constructor(root: string) {
    this.dir = join(root, WEBHOOK_DIR);
  }

  /** Stores `event` unless its file exists. */
  async put(event: WebhookEvent): Promise<boolean> {
    checkId(event.id);
    return this.locked(async () => {
      if (existsSync(this.path(event.id))) return false;
      await this.write(event);
      return true;
    });
  }

  /** Leases the due events, oldest first, under the lock. */
  async claim(
    instance: string,
    now: number,
    leaseMs: number,
    limit: number,
    options?: WebhookClaimOptions,
  ): Promise<WebhookEvent[]> {
    if (!existsSync(this.dir)) return [];
    return this.locked(async () => {
      const due = (await this.readAll())
        .filter((e) => isClaimable(e, now, options))
        .sort((a, b) => a.createdAt - b.createdAt);
      const claimed: WebhookEvent[] = [];
      for (const event of due.slice(0, limit)) {
        const leased = { ...event, lease: { instance, until: now + leaseMs } };
        await this.write(leased);
        claimed.push(leased);
      }
      return claimed;
    });
  }

  /** Writes the outcome while `instance` holds the lease. */
  async settle(id: string, instance: string, update: WebhookAttemptUpdate): Promise<boolean> {
    checkId(id);
    return this.locked(async () => {
      const event = await this.read(id);
      if (event?.lease?.instance !== instance) return false;
      const { lease: _lease, ...rest } = event;
      await this.write({ ...rest, ...update });
      return true;
    });
  }

  /** The tenant's events, newest first. */
  async list(query: WebhookEventQuery): Promise<WebhookEventPage> {
    return pageOfWebhookEvents(await this.readAll(), query);
  }

  /** The event, or undefined. */
  get(id: string): Promise<WebhookEvent | undefined> {
    checkId(id);
    return this.read(id);
  }

  /** Removes settled events created before `before`. */
  async prune(before: number): Promise<number> {
    if (!existsSync(this.dir)) return 0;
    return this.locked(async () => {
      let removed = 0;
      for (const e of await this.readAll()) {
        if (e.state === "pending" || e.createdAt >= before) continue;
        await unlink(this.path(e.id)).catch(() => undefined);
        removed++;
      }
      return removed;
    });
  }

  /** The oldest pending event's createdAt. */
  async oldestPending(): Promise<number | undefined> {
    const pending = (await this.readAll()).filter((e) => e.state === "pending").map((e) => e.createdAt);
    return pending.length > 0 ? Math.min(...pending) : undefined;
  }

  private path(id: string): string {
    return join(this.dir, `${id}.json`);
  }

  private async locked<T>(fn: () => Promise<T>): Promise<T> {
    mkdirSync(this.dir, { recursive: true });
    const release = await acquireFileLock(join(this.dir, ".lock"));
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  private async write(event: WebhookEvent): Promise<void> {
    const tmp = join(this.dir, `.${event.id}.${randomBytes(6).toString("hex")}.tmp`);
    const handle = await open(tmp, "w");
    try {
      await handle.writeFile(JSON.stringify(event));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.path(event.id));
    await syncDirectory(this.dir);
  }

  private async read(id: string): Promise<WebhookEvent | undefined> {
    try {
      return JSON.parse(await readFile(this.path(id), "utf8")) as WebhookEvent;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new AgentError("DATA_LOSS", `webhook event file ${id}.json cannot be read: ${(err as Error).message}`);
    }
  }

  private async readAll(): Promise<WebhookEvent[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const events = await Promise.all(
      names.filter((n) => EVENT_FILE.test(n)).map((n) => this.read(n.slice(0, -".json".length))),
    );
    return events.filter((e): e is WebhookEvent => e !== undefined);
  }
}

function checkId(id: string): void {
  if (!EVENT_FILE.test(`${id}.json`)) throw new AgentError("INVALID_ARGUMENT", `malformed webhook event ID "${id}"`);
}
