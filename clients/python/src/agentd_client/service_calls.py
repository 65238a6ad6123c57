"""The ``AgentService`` calls as data, shared by ``AgentClient`` and ``AsyncAgentClient``.

Each unary builder turns a client method's arguments into a :class:`UnaryCall`: which stub
method to invoke, the request to send, and how the response becomes the method's return value.
The clients only add the transport (blocking or ``await``) and the error mapping. The
``WatchSnapshot`` request and the statuses that end a watch live here too.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional

from google.protobuf.message import Message

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from .errors import TurnFailedError
from .inputs import BusyPolicyLike, InputLike, StateLike, build_init, build_input
from .json_values import message_text

__all__ = [
    "UnaryCall",
    "run_call",
    "get_snapshot_call",
    "list_snapshots_call",
    "abort_call",
    "list_agents_call",
    "watch_snapshot_request",
    "reply_text",
    "TERMINAL_STATUSES",
]

#: Snapshot statuses after which a snapshot never changes again (``expired`` is a pending
#: snapshot whose heartbeat went stale, computed on read).
TERMINAL_STATUSES = frozenset(
    {
        state_pb2.SNAPSHOT_STATUS_COMPLETED,
        state_pb2.SNAPSHOT_STATUS_FAILED,
        state_pb2.SNAPSHOT_STATUS_ABORTED,
        state_pb2.SNAPSHOT_STATUS_EXPIRED,
    }
)


def _same(response: Any) -> Any:
    return response


class UnaryCall(NamedTuple):
    """One unary RPC: ``method`` is the ``AgentServiceStub`` attribute to call with
    ``request``; ``shape`` maps its response to what the client method returns."""

    method: str
    request: Message
    shape: Callable[[Any], Any] = _same


def run_call(
    agent: str,
    input: Optional[InputLike],
    *,
    session_id: Optional[str],
    snapshot_id: Optional[str],
    state: Optional[StateLike],
    detach: bool,
    metadata: Optional[Dict[str, Any]],
    busy_policy: Optional[BusyPolicyLike] = None,
) -> UnaryCall:
    """``Run``: one turn; returns the ``AgentOutput``."""
    request = agent_service_pb2.RunRequest(
        init=build_init(
            agent,
            session_id=session_id,
            snapshot_id=snapshot_id,
            state=state,
            busy_policy=busy_policy,
        ),
        input=build_input(input, metadata=metadata, detach=detach),
    )
    return UnaryCall("Run", request, lambda response: response.output)


def get_snapshot_call(agent: str, snapshot_id: Optional[str], session_id: Optional[str]) -> UnaryCall:
    """``GetSnapshot`` by ID or by session (latest); returns the ``Snapshot``. Raises
    ``ValueError`` when neither is given."""
    if not snapshot_id and not session_id:
        raise ValueError("get_snapshot needs snapshot_id or session_id")
    request = agent_service_pb2.GetSnapshotRequest(
        agent=agent, snapshot_id=snapshot_id or "", session_id=session_id or ""
    )
    return UnaryCall("GetSnapshot", request, lambda response: response.snapshot)


def list_snapshots_call(
    agent: str, session_id: str, *, page_size: int, page_token: str, include_state: bool
) -> UnaryCall:
    """``ListSnapshots``: one page; returns the ``ListSnapshotsResponse``."""
    request = agent_service_pb2.ListSnapshotsRequest(
        agent=agent,
        session_id=session_id,
        page_size=page_size,
        page_token=page_token,
        include_state=include_state,
    )
    return UnaryCall("ListSnapshots", request)


def abort_call(agent: str, snapshot_id: str) -> UnaryCall:
    """``Abort``: returns the ``AbortResponse``."""
    return UnaryCall("Abort", agent_service_pb2.AbortRequest(agent=agent, snapshot_id=snapshot_id))


def list_agents_call() -> UnaryCall:
    """``ListAgents``: returns the ``AgentInfo``s as a list."""
    return UnaryCall(
        "ListAgents", agent_service_pb2.ListAgentsRequest(), lambda response: list(response.agents)
    )


def watch_snapshot_request(agent: str, snapshot_id: str) -> agent_service_pb2.WatchSnapshotRequest:
    """The request of the server-streaming ``WatchSnapshot``."""
    return agent_service_pb2.WatchSnapshotRequest(agent=agent, snapshot_id=snapshot_id)


def reply_text(output: agent_pb2.AgentOutput) -> str:
    """The reply text of a ``run`` output; raises ``TurnFailedError`` when the turn failed
    in-band."""
    if output.finish_reason == state_pb2.FINISH_REASON_FAILED:
        raise TurnFailedError(output)
    return message_text(output.message)
