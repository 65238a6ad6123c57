"""Builders for the wire messages a caller sends: ``AgentInit`` and ``AgentInput``."""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from google.protobuf import duration_pb2, json_format, timestamp_pb2

from agentd.v1 import agent_pb2, content_pb2, state_pb2

from .json_values import dict_to_struct

__all__ = [
    "BusyPolicyLike",
    "InputLike",
    "PatchLike",
    "StateLike",
    "TTLLike",
    "TimeLike",
    "build_init",
    "build_input",
    "new_request_id",
    "patch_operations",
    "to_duration",
    "to_timestamp",
]

#: What ``state_patch=`` / ``messages_patch=`` accept: RFC 6902 operations as dicts
#: (``op``, ``path``, ``value``, ``from``) or ``agentd.v1.JsonPatchOperation`` messages.
PatchLike = Sequence[Union[Mapping[str, Any], agent_pb2.JsonPatchOperation]]


#: What ``send`` / ``run`` accept: a user text, a ``Message``, or a full ``AgentInput``.
InputLike = Union[str, content_pb2.Message, agent_pb2.AgentInput]

#: What ``state=`` accepts: a ``SessionState`` (e.g. ``conversation.state`` or
#: ``output.state``) or its proto-JSON form as a dict (``{"sessionId": ..., "custom": ...}``).
StateLike = Union[state_pb2.SessionState, Mapping[str, Any]]

#: What ``busy_policy=`` accepts: ``"reject"``, ``"enqueue"`` or ``"interrupt"``, or an
#: ``agentd.v1.BusyPolicy`` value (e.g. ``agent_pb2.BUSY_POLICY_ENQUEUE``). ``None`` (or
#: ``BUSY_POLICY_UNSPECIFIED``) leaves the choice to the server (REJECT unless it sets
#: ``--busy-policy``).
BusyPolicyLike = Union[str, "agent_pb2.BusyPolicy"]

#: What ``ttl=`` accepts: a ``datetime.timedelta``, a number of seconds (``int`` or ``float``),
#: or a ``google.protobuf.Duration``.
TTLLike = Union[datetime.timedelta, int, float, duration_pb2.Duration]

#: What ``updated_after=`` accepts: a ``datetime.datetime`` (a naive one is local time, as
#: ``datetime.now()`` returns it), seconds since the Unix epoch (``time.time()``), or a
#: ``google.protobuf.Timestamp``.
TimeLike = Union[datetime.datetime, int, float, timestamp_pb2.Timestamp]

_BUSY_POLICIES: Dict[str, int] = {
    "reject": agent_pb2.BUSY_POLICY_REJECT,
    "enqueue": agent_pb2.BUSY_POLICY_ENQUEUE,
    "interrupt": agent_pb2.BUSY_POLICY_INTERRUPT,
}


def _busy_policy(value: Optional[BusyPolicyLike]) -> int:
    """The wire ``BusyPolicy`` number of ``value``; raises ``ValueError`` for an unknown name
    or number and ``TypeError`` for other types."""
    if value is None:
        return agent_pb2.BUSY_POLICY_UNSPECIFIED
    if isinstance(value, str):
        name = value.strip().lower()
        policy = _BUSY_POLICIES.get(name[len("busy_policy_"):] if name.startswith("busy_policy_") else name)
        if policy is None:
            raise ValueError(
                f"unknown busy_policy {value!r}: use 'reject', 'enqueue' or 'interrupt' "
                "(or an agentd.v1.BusyPolicy value)"
            )
        return policy
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in agent_pb2.BusyPolicy.values():
            raise ValueError(
                f"unknown busy_policy {value!r}: use 'reject', 'enqueue' or 'interrupt' "
                "(or an agentd.v1.BusyPolicy value)"
            )
        return int(value)
    raise TypeError(
        f"busy_policy must be 'reject', 'enqueue', 'interrupt' or an agentd.v1.BusyPolicy value, "
        f"not {type(value).__name__}"
    )


def to_duration(value: TTLLike) -> duration_pb2.Duration:
    """The ``Duration`` of a ``timedelta``, a number of seconds or a ``Duration`` (copied).
    Raises ``TypeError`` for other types (``bool`` included). The value is not checked: the
    server rejects time-to-lives below 1 ms or above 10 years with INVALID_ARGUMENT."""
    out = duration_pb2.Duration()
    if isinstance(value, duration_pb2.Duration):
        out.CopyFrom(value)
    elif isinstance(value, datetime.timedelta):
        out.FromTimedelta(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.FromNanoseconds(round(value * 1_000_000_000))
    else:
        raise TypeError(
            f"ttl must be a datetime.timedelta, a number of seconds or a Duration, not {type(value).__name__}"
        )
    return out


def to_timestamp(value: TimeLike) -> timestamp_pb2.Timestamp:
    """The ``Timestamp`` of a ``datetime`` (naive: local time), seconds since the epoch, or a
    ``Timestamp`` (copied). Raises ``TypeError`` for other types (``bool`` included)."""
    out = timestamp_pb2.Timestamp()
    if isinstance(value, timestamp_pb2.Timestamp):
        out.CopyFrom(value)
    elif isinstance(value, datetime.datetime):
        out.FromDatetime(value if value.tzinfo is not None else value.astimezone())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.FromNanoseconds(round(value * 1_000_000_000))
    else:
        raise TypeError(
            f"a time must be a datetime.datetime, seconds since the epoch or a Timestamp, not {type(value).__name__}"
        )
    return out


def build_init(
    agent: str,
    *,
    session_id: Optional[str] = None,
    snapshot_id: Optional[str] = None,
    state: Optional[StateLike] = None,
    busy_policy: Optional[BusyPolicyLike] = None,
    labels: Optional[Mapping[str, str]] = None,
    ttl: Optional[TTLLike] = None,
    state_patch: Optional[PatchLike] = None,
    messages_patch: Optional[PatchLike] = None,
) -> agent_pb2.AgentInit:
    """Returns the ``AgentInit`` for ``agent`` with the given conversation source and busy
    policy (what the call does when another invocation holds the session), and the
    ``labels`` and idle time-to-live ``ttl`` of a NEW session (``None``: no labels, the
    server's ``--session-ttl``).

    ``state_patch`` forks from an edited past: RFC 6902 operations (dicts such as
    ``{"op": "replace", "path": "/notes/0", "value": "x"}``, or ``JsonPatchOperation``
    messages) on the custom state of the resumed snapshot (``session_id`` or
    ``snapshot_id``), applied before the first turn runs; the server checks the result
    against the agent's state schema (INVALID_ARGUMENT naming the path) and notes the edit
    on the first new snapshot (``Snapshot.edit``). ``messages_patch`` does the same on the
    history in its proto-JSON form (as ``get_snapshot`` shows it).

    Passes the sources, labels and ttl through unvalidated: the server owns the rules (state
    on a server-managed agent is FAILED_PRECONDITION, state with an ID is INVALID_ARGUMENT,
    as are bad label keys or values and a ttl outside 1 ms..10 years). Raises ``ValueError``
    for an empty agent name or an unknown ``busy_policy``, ``TypeError`` for a ``ttl`` of
    another type, and ``json_format.ParseError`` for a ``state`` dict that is not a
    SessionState in proto-JSON form.
    """
    if not agent:
        raise ValueError("agent name is required (see AgentClient.list_agents())")
    init = agent_pb2.AgentInit(agent=agent, busy_policy=_busy_policy(busy_policy))
    if session_id:
        init.session_id = session_id
    if snapshot_id:
        init.snapshot_id = snapshot_id
    if state is not None:
        if isinstance(state, state_pb2.SessionState):
            init.state.CopyFrom(state)
        else:
            json_format.ParseDict(dict(state), init.state)
    if labels:
        init.labels.update(labels)
    if ttl is not None:
        init.ttl.CopyFrom(to_duration(ttl))
    init.state_patch.extend(patch_operations(state_patch))
    init.messages_patch.extend(patch_operations(messages_patch))
    return init


def patch_operations(patch: Optional[PatchLike]) -> List[agent_pb2.JsonPatchOperation]:
    """``patch`` as ``JsonPatchOperation`` messages (``None``: none). A dict needs ``op`` and
    ``path``; ``value`` is any JSON value, ``from`` the source of ``move``/``copy``. Raises
    ``ValueError`` for a dict without ``op`` or ``path``."""
    out: List[agent_pb2.JsonPatchOperation] = []
    for operation in patch or ():
        if isinstance(operation, agent_pb2.JsonPatchOperation):
            out.append(operation)
            continue
        if "op" not in operation or "path" not in operation:
            raise ValueError(f"a patch operation needs 'op' and 'path': {dict(operation)!r}")
        op = agent_pb2.JsonPatchOperation(op=operation["op"], path=operation["path"])
        if "value" in operation:
            json_format.ParseDict(operation["value"], op.value)
        if operation.get("from"):
            setattr(op, "from", operation["from"])
        out.append(op)
    return out


def new_request_id() -> str:
    """A fresh request ID (idempotency key): a random UUID v4 in canonical lowercase form."""
    return str(uuid.uuid4())


def build_input(
    value: Optional[InputLike] = None,
    *,
    metadata: Optional[Dict[str, Any]] = None,
    detach: bool = False,
    request_id: Optional[str] = None,
) -> agent_pb2.AgentInput:
    """Returns an ``AgentInput`` for ``value``.

    A ``str`` becomes a user message with one text part; a ``Message`` is wrapped (its role
    defaults to ``ROLE_USER``); an ``AgentInput`` is copied. ``metadata`` is set on the
    message (the offline ``echo`` model reads ``echoDelayMs`` there); ``detach=True`` sets
    the detach bit. Every input gets a ``request_id`` (the server runs an input once per
    request ID, however often it is retried): ``request_id`` if given, else the one the
    ``AgentInput`` carries, else ``new_request_id()``. The ID is not checked here: the server
    answers INVALID_ARGUMENT for one that is not 1-64 characters of ``[A-Za-z0-9_-]``.
    Raises ``TypeError`` for other types.
    """
    out = agent_pb2.AgentInput()
    if isinstance(value, agent_pb2.AgentInput):
        out.CopyFrom(value)
    elif isinstance(value, content_pb2.Message):
        out.message.CopyFrom(value)
        if out.message.role == content_pb2.ROLE_UNSPECIFIED:
            out.message.role = content_pb2.ROLE_USER
    elif isinstance(value, str):
        out.message.role = content_pb2.ROLE_USER
        out.message.content.add(text=value)
    elif value is not None:
        raise TypeError(
            f"input must be str, agentd.v1.Message or agentd.v1.AgentInput, not {type(value).__name__}"
        )
    if metadata:
        out.message.metadata.CopyFrom(dict_to_struct(metadata))
    if detach:
        out.detach = True
    if request_id is not None:
        out.request_id = request_id
    elif not out.request_id:
        out.request_id = new_request_id()
    return out
