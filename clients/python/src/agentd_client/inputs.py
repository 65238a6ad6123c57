"""Builders for the wire messages a caller sends: ``AgentInit`` and ``AgentInput``."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

from google.protobuf import json_format

from agentd.v1 import agent_pb2, content_pb2, state_pb2

from .json_values import dict_to_struct

__all__ = ["InputLike", "StateLike", "build_init", "build_input"]

#: What ``send`` / ``run`` accept: a user text, a ``Message``, or a full ``AgentInput``.
InputLike = Union[str, content_pb2.Message, agent_pb2.AgentInput]

#: What ``state=`` accepts: a ``SessionState`` (e.g. ``conversation.state`` or
#: ``output.state``) or its proto-JSON form as a dict (``{"sessionId": ..., "custom": ...}``).
StateLike = Union[state_pb2.SessionState, Mapping[str, Any]]


def build_init(
    agent: str,
    *,
    session_id: Optional[str] = None,
    snapshot_id: Optional[str] = None,
    state: Optional[StateLike] = None,
) -> agent_pb2.AgentInit:
    """Returns the ``AgentInit`` for ``agent`` with the given conversation source.

    Passes the sources through unvalidated: the server owns the rules (state on a
    server-managed agent is FAILED_PRECONDITION, state with an ID is INVALID_ARGUMENT).
    Raises ``ValueError`` for an empty agent name and ``json_format.ParseError`` for a
    ``state`` dict that is not a SessionState in proto-JSON form.
    """
    if not agent:
        raise ValueError("agent name is required (see AgentClient.list_agents())")
    init = agent_pb2.AgentInit(agent=agent)
    if session_id:
        init.session_id = session_id
    if snapshot_id:
        init.snapshot_id = snapshot_id
    if state is not None:
        if isinstance(state, state_pb2.SessionState):
            init.state.CopyFrom(state)
        else:
            json_format.ParseDict(dict(state), init.state)
    return init


def build_input(
    value: Optional[InputLike] = None,
    *,
    metadata: Optional[Dict[str, Any]] = None,
    detach: bool = False,
) -> agent_pb2.AgentInput:
    """Returns an ``AgentInput`` for ``value``.

    A ``str`` becomes a user message with one text part; a ``Message`` is wrapped (its role
    defaults to ``ROLE_USER``); an ``AgentInput`` is copied. ``metadata`` is set on the
    message (the offline ``echo`` model reads ``echoDelayMs`` there); ``detach=True`` sets
    the detach bit. Raises ``TypeError`` for other types.
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
    return out
