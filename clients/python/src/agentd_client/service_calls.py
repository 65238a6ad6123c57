"""The ``AgentService`` calls as data, shared by ``AgentClient`` and ``AsyncAgentClient``.

Each unary builder turns a client method's arguments into a :class:`UnaryCall`: which stub
method to invoke, the request to send, and how the response becomes the method's return value.
The clients only add the transport (blocking or ``await``) and the error mapping. The
``WatchSnapshot`` and ``AttachInvocation`` requests and the statuses that end a watch live here
too.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Mapping, NamedTuple, Optional

from google.protobuf.message import Message

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from .enums import SnapshotStatus
from .errors import TurnFailedError
from .inputs import (
    BusyPolicyLike,
    InputLike,
    PatchLike,
    StateLike,
    TimeLike,
    TTLLike,
    build_init,
    build_input,
    new_request_id,
    to_duration,
    to_timestamp,
)
from .json_values import message_text

__all__ = [
    "UnaryCall",
    "run_call",
    "get_snapshot_call",
    "list_snapshots_call",
    "abort_call",
    "list_agents_call",
    "list_sessions_request",
    "list_sessions_call",
    "get_session_call",
    "update_session_call",
    "delete_session_call",
    "watch_snapshot_request",
    "attach_invocation_request",
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
    labels: Optional[Mapping[str, str]] = None,
    ttl: Optional[TTLLike] = None,
    state_patch: Optional[PatchLike] = None,
    messages_patch: Optional[PatchLike] = None,
    request_id: Optional[str] = None,
) -> UnaryCall:
    """``Run``: one turn; returns the ``AgentOutput``. The input carries ``request_id`` (else
    a new one), the same on every retry of the call."""
    request = agent_service_pb2.RunRequest(
        init=build_init(
            agent,
            session_id=session_id,
            snapshot_id=snapshot_id,
            state=state,
            busy_policy=busy_policy,
            labels=labels,
            ttl=ttl,
            state_patch=state_patch,
            messages_patch=messages_patch,
        ),
        input=build_input(input, metadata=metadata, detach=detach, request_id=request_id),
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
    """``Abort``: returns the snapshot's ``SnapshotStatus`` (ABORTED, or the terminal status it
    already had)."""
    return UnaryCall(
        "Abort",
        agent_service_pb2.AbortRequest(agent=agent, snapshot_id=snapshot_id),
        lambda response: SnapshotStatus.of(response.status),
    )


def list_agents_call() -> UnaryCall:
    """``ListAgents``: returns the ``AgentInfo``s as a list."""
    return UnaryCall(
        "ListAgents", agent_service_pb2.ListAgentsRequest(), lambda response: list(response.agents)
    )


def list_sessions_request(
    agent: Optional[str] = None,
    *,
    labels: Optional[Mapping[str, str]] = None,
    updated_after: Optional[TimeLike] = None,
    page_size: Optional[int] = None,
    page_token: str = "",
) -> agent_service_pb2.ListSessionsRequest:
    """The ``ListSessionsRequest`` of ``list_sessions``' filters (``None``: no filter; page
    size ``None`` or 0: the server's default, 50). Raises ``TypeError`` for an
    ``updated_after`` of another type."""
    request = agent_service_pb2.ListSessionsRequest(
        agent=agent or "", page_size=page_size or 0, page_token=page_token
    )
    if labels:
        request.labels.update(labels)
    if updated_after is not None:
        request.updated_after.CopyFrom(to_timestamp(updated_after))
    return request


def list_sessions_call(request: agent_service_pb2.ListSessionsRequest) -> UnaryCall:
    """``ListSessions``: one page; returns the ``ListSessionsResponse``."""
    return UnaryCall("ListSessions", request)


def get_session_call(session_id: str) -> UnaryCall:
    """``GetSession``: returns the ``Session``."""
    request = agent_service_pb2.GetSessionRequest(session_id=session_id)
    return UnaryCall("GetSession", request, lambda response: response.session)


def update_session_call(
    session_id: str,
    *,
    set_labels: Optional[Mapping[str, str]] = None,
    remove_labels: Optional[Iterable[str]] = None,
    ttl: Optional[TTLLike] = None,
    clear_ttl: bool = False,
) -> UnaryCall:
    """``UpdateSession``: returns the updated ``Session``. ``ttl`` together with
    ``clear_ttl`` is passed on (the server answers INVALID_ARGUMENT)."""
    request = agent_service_pb2.UpdateSessionRequest(session_id=session_id, clear_ttl=clear_ttl)
    if set_labels:
        request.set_labels.update(set_labels)
    if remove_labels is not None:
        if isinstance(remove_labels, str):
            raise TypeError("remove_labels takes a list of label keys, not a str")
        request.remove_labels.extend(remove_labels)
    if ttl is not None:
        request.ttl.CopyFrom(to_duration(ttl))
    return UnaryCall("UpdateSession", request, lambda response: response.session)


def delete_session_call(session_id: str, request_id: Optional[str] = None) -> UnaryCall:
    """``DeleteSession``: returns ``deleted`` (``False`` when there was nothing to delete).
    The request carries ``request_id`` (else a new one), so a retry answers as the first
    attempt did."""
    request = agent_service_pb2.DeleteSessionRequest(
        session_id=session_id, request_id=request_id or new_request_id()
    )
    return UnaryCall("DeleteSession", request, lambda response: response.deleted)


def watch_snapshot_request(agent: str, snapshot_id: str) -> agent_service_pb2.WatchSnapshotRequest:
    """The request of the server-streaming ``WatchSnapshot``."""
    return agent_service_pb2.WatchSnapshotRequest(agent=agent, snapshot_id=snapshot_id)


def attach_invocation_request(
    agent: str, snapshot_id: str, after_sequence: int
) -> agent_service_pb2.AttachInvocationRequest:
    """The request of the server-streaming ``AttachInvocation``. Raises ``ValueError`` for an
    ``after_sequence`` below 0."""
    if after_sequence < 0:
        raise ValueError(f"after_sequence must be 0 or more, got {after_sequence}")
    return agent_service_pb2.AttachInvocationRequest(
        agent=agent, snapshot_id=snapshot_id, after_sequence=after_sequence
    )


def reply_text(output: agent_pb2.AgentOutput) -> str:
    """The reply text of a ``run`` output; raises ``TurnFailedError`` when the turn failed
    in-band."""
    if output.finish_reason == state_pb2.FINISH_REASON_FAILED:
        raise TurnFailedError(output)
    return message_text(output.message)
