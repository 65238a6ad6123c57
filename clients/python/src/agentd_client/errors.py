"""Errors raised by the agentd client, each carrying a ``grpc.StatusCode``."""

from __future__ import annotations

from typing import Dict, Optional, Type

import grpc

from agentd.v1 import agent_pb2

__all__ = [
    "AgentdError",
    "AbortedError",
    "CancelledError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "TurnFailedError",
    "CustomPatchError",
    "ConversationClosedError",
    "error_from_rpc",
    "error_for_code",
]


class AgentdError(Exception):
    """Base class of every error this client raises.

    Guarantees ``code`` is a ``grpc.StatusCode`` (the RPC's status, or the in-band
    failure's status) and ``details`` is the server's (or client's) human-readable message.
    """

    #: The status code this class stands for (subclasses override it).
    default_code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, details: str, code: Optional[grpc.StatusCode] = None) -> None:
        self.code: grpc.StatusCode = code if code is not None else self.default_code
        self.details: str = details
        super().__init__(f"{self.code.name}: {details}")


class CancelledError(AgentdError):
    """The call was cancelled (CANCELLED)."""

    default_code = grpc.StatusCode.CANCELLED


class InvalidArgumentError(AgentdError):
    """Malformed or conflicting input, e.g. ``state`` together with an ID (INVALID_ARGUMENT)."""

    default_code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceededError(AgentdError):
    """The call's timeout passed (DEADLINE_EXCEEDED)."""

    default_code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFoundError(AgentdError):
    """Unknown agent, session or snapshot (NOT_FOUND)."""

    default_code = grpc.StatusCode.NOT_FOUND


class PermissionDeniedError(AgentdError):
    """The caller may not do this (PERMISSION_DENIED)."""

    default_code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(AgentdError):
    """A server limit was hit (RESOURCE_EXHAUSTED)."""

    default_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(AgentdError):
    """The resume mode does not match the agent, the snapshot is not resumable, or detach is
    unsupported by the agent's store (FAILED_PRECONDITION)."""

    default_code = grpc.StatusCode.FAILED_PRECONDITION


class AbortedError(AgentdError):
    """The session is busy (``busy_policy="reject"``, the server's default), or this
    invocation was stopped by a call with ``busy_policy="interrupt"`` (ABORTED)."""

    default_code = grpc.StatusCode.ABORTED


class UnimplementedError(AgentdError):
    """The server does not implement this call (UNIMPLEMENTED)."""

    default_code = grpc.StatusCode.UNIMPLEMENTED


class InternalError(AgentdError):
    """The server failed (INTERNAL)."""

    default_code = grpc.StatusCode.INTERNAL


class UnavailableError(AgentdError):
    """The server cannot be reached (UNAVAILABLE); retrying later may work."""

    default_code = grpc.StatusCode.UNAVAILABLE


class UnauthenticatedError(AgentdError):
    """Missing or invalid credentials (UNAUTHENTICATED)."""

    default_code = grpc.StatusCode.UNAUTHENTICATED


class TurnFailedError(AgentdError):
    """An invocation failed in-band (``finish_reason`` FAILED); raised by the ``*_text``
    helpers, which have no other way to report it. ``output`` is the full ``AgentOutput``
    (last good snapshot / state, and ``output.error``); ``code`` is the in-band status."""

    default_code = grpc.StatusCode.UNKNOWN

    def __init__(self, output: agent_pb2.AgentOutput) -> None:
        self.output = output
        status = output.error.status or "UNKNOWN"
        code = grpc.StatusCode.__members__.get(status, grpc.StatusCode.UNKNOWN)
        super().__init__(output.error.message or "the agent invocation failed", code)


class CustomPatchError(AgentdError):
    """A streamed custom-state patch did not apply to the tracked document, so the live
    ``custom`` value no longer mirrors the server's (DATA_LOSS)."""

    default_code = grpc.StatusCode.DATA_LOSS


class ConversationClosedError(AgentdError):
    """The conversation already ended (output received, detached, cancelled or failed), so it
    takes no more input (FAILED_PRECONDITION). Start a new one with ``client.chat``."""

    default_code = grpc.StatusCode.FAILED_PRECONDITION


_BY_CODE: Dict[grpc.StatusCode, Type[AgentdError]] = {
    cls.default_code: cls
    for cls in (
        AbortedError,
        CancelledError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        PermissionDeniedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        UnauthenticatedError,
    )
}


def error_for_code(code: grpc.StatusCode, details: str) -> AgentdError:
    """Returns the ``AgentdError`` subclass instance for ``code`` (``AgentdError`` itself for
    codes without a dedicated class), with ``code`` and ``details`` set."""
    cls = _BY_CODE.get(code, AgentdError)
    return cls(details, code)


def error_from_rpc(err: grpc.RpcError) -> AgentdError:
    """Converts a grpcio ``RpcError`` (sync or ``grpc.aio.AioRpcError``) into the matching
    ``AgentdError`` subclass, keeping its status code and details."""
    code_fn = getattr(err, "code", None)
    details_fn = getattr(err, "details", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    details = details_fn() if callable(details_fn) else str(err)
    if code is None:
        code = grpc.StatusCode.UNKNOWN
    out = error_for_code(code, details or code.name)
    out.__cause__ = err
    return out
