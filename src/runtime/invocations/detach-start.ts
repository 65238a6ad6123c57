import type { AgentInput } from "../../types/agent-io.js";
import type { Principal } from "../../types/principal.js";
import type { SessionState } from "../../types/session-state.js";
import type { DetachedRunOptions, DetachedWorkStart } from "../background/detached-run.js";
import type { AdoptedWork } from "../background/adopted-work.js";
import type { TurnCommits } from "../sessions/turn-commits.js";
import type { TurnRequest } from "../sessions/turn-request.js";
import type { InputProgress } from "./input-progress.js";

/** What an invocation's detached run starts from. */
export interface DetachStartParts<S> {
  /** A takeover: the dead instance's work the invocation adopts. */
  adopted?: AdoptedWork<S>;
  /** The detach input's request ID and fingerprint, recorded on the pending row (a retry answers that row). */
  request?: TurnRequest;
  commits: TurnCommits<S> | undefined;
  /** The state the invocation started from. */
  initialState: SessionState<S>;
  /** The inputs not running yet: queued steers, then queued inputs (read only for a detach). */
  queued: () => readonly AgentInput[];
  /** Which input runs and where the stream stands. */
  progress: InputProgress;
  principal: Principal;
  /** This server instance's name, recorded with the work. */
  instance: string;
}

/**
 * How a detached run starts: adopting a dead instance's pending row, or
 * writing one for this invocation's remaining work, recorded so that another
 * instance can take it over.
 */
export function detachStart<S>(parts: DetachStartParts<S>): DetachedRunOptions<S>["start"] {
  const { adopted, request } = parts;
  return adopted
    ? {
        kind: "adopt",
        snapshotId: adopted.snapshotId,
        parent: adopted.parent,
        run: adopted.run,
        ...(adopted.usage ? { usage: adopted.usage } : {}),
      }
    : { kind: "detach", work: remainingWork(parts), ...(request ? { request } : {}) };
}

/** What detached work records so that another instance can take it over. */
function remainingWork<S>(parts: DetachStartParts<S>): DetachedWorkStart {
  // Also with an edit not yet committed: a takeover restarts from the edited state, not the parent's.
  const initial =
    parts.commits?.last && !parts.commits.pendingEdit ? undefined : (parts.initialState as SessionState<unknown>);
  const work = parts.progress.remainingWork(parts.queued(), parts.principal, initial);
  return { ...work, instance: parts.instance };
}
