"""What the synchronous and asyncio clients share: the channel, the stub and call settings."""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

import grpc

from agentd.v1 import agent_service_pb2_grpc

__all__ = ["ClientBase", "Metadata"]

#: ``grpc.Channel`` or ``grpc.aio.Channel``.
ChannelT = TypeVar("ChannelT")

#: gRPC metadata sent with every call, e.g. ``[("authorization", "Bearer ...")]``.
Metadata = Optional[Sequence[Tuple[str, str]]]


class ClientBase(Generic[ChannelT]):
    """Opens (or adopts) a channel and holds the settings every call uses.

    Guarantees: with ``channel`` the client uses it and never closes it; otherwise it opens a
    secure channel when ``credentials`` are given, an insecure one if not, with the module in
    ``_channels`` (``grpc`` or ``grpc.aio``), and owns it. Raises ``ValueError`` with neither a
    target nor a channel. ``_call_settings(timeout)`` is the metadata and the deadline
    (``timeout``, else the client's default) of one call.
    """

    #: Largest response the client accepts by default (grpcio's own default is 4 MiB). The server
    #: stores up to ``--max-session-bytes`` (64 MiB by default) per session and GetSnapshot returns
    #: the whole state, so the client accepts that much and some framing headroom.
    DEFAULT_MAX_RECEIVE_BYTES: ClassVar[int] = 128 * 1024 * 1024

    #: ``grpc`` for the synchronous client, ``grpc.aio`` for the asyncio one.
    _channels: ClassVar[ModuleType] = grpc

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        channel: Optional[ChannelT] = None,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Optional[Sequence[Tuple[str, Any]]] = None,
        metadata: Metadata = None,
        timeout: Optional[float] = None,
    ) -> None:
        if channel is None:
            if not target:
                raise ValueError(
                    f"{type(self).__name__} needs a target like '127.0.0.1:50051' or a channel"
                )
            options = with_default_limits(options)
            if credentials is not None:
                channel = self._channels.secure_channel(target, credentials, options=options)
            else:
                channel = self._channels.insecure_channel(target, options=options)
            self._owns_channel = True
        else:
            self._owns_channel = False
        self._channel: ChannelT = channel
        self._stub = agent_service_pb2_grpc.AgentServiceStub(channel)
        self._metadata = tuple(metadata or ())
        self._timeout = timeout

    @property
    def channel(self) -> ChannelT:
        """The underlying grpcio channel (e.g. for the generated stubs directly)."""
        return self._channel

    def _call_settings(self, timeout: Optional[float]) -> Dict[str, Any]:
        return {
            "metadata": self._metadata,
            "timeout": timeout if timeout is not None else self._timeout,
        }


def with_default_limits(options: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, Any]]:
    """``options`` plus ``grpc.max_receive_message_length`` = ``ClientBase.DEFAULT_MAX_RECEIVE_BYTES``
    unless the caller set it (the caller's value always wins)."""
    merged = list(options or ())
    if not any(name == "grpc.max_receive_message_length" for name, _ in merged):
        merged.append(("grpc.max_receive_message_length", ClientBase.DEFAULT_MAX_RECEIVE_BYTES))
    return merged
