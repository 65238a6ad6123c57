"""What the synchronous and asyncio clients share: the channel, the stub and call settings."""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar, Dict, Generic, Optional, Sequence, Tuple, TypeVar

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
