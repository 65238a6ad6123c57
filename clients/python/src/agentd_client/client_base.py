"""What the synchronous and asyncio clients share: the channel, the stub and call settings."""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar, Generic, List, Optional, Sequence, Tuple, TypeVar

import grpc

from agentd.v1 import agent_service_pb2_grpc

from .errors import UnauthenticatedError
from .retrier import ClientStats, Retrier
from .retry_policy import DEFAULT_RETRY, RetryPolicy
from .security import TLSConfig, TLSLike, TokenLike, bearer_value

__all__ = ["ClientBase", "Interceptors", "Metadata", "intercept_channel"]

#: ``grpc.Channel`` or ``grpc.aio.Channel``.
ChannelT = TypeVar("ChannelT")

#: gRPC metadata sent with every call, e.g. ``[("x-request-id", "...")]`` (a bearer token goes in
#: ``token=``).
Metadata = Optional[Sequence[Tuple[str, str]]]

#: Client interceptors, the first outermost (it sees each call first). ``AgentClient`` takes
#: grpcio's (``grpc.UnaryUnaryClientInterceptor``, ``grpc.StreamStreamClientInterceptor``, ...)
#: and OpenTelemetry's ``opentelemetry.instrumentation.grpc.client_interceptor()``;
#: ``AsyncAgentClient`` takes ``grpc.aio`` ones, e.g. ``aio_client_interceptors()`` of the same
#: package.
Interceptors = Optional[Sequence[Any]]


class ClientBase(Generic[ChannelT]):
    """Opens (or adopts) a channel and holds the settings every call uses.

    Guarantees: with ``channel`` the client uses it and never closes it; otherwise it opens a
    secure channel when ``tls`` or ``credentials`` are given, an insecure one if not, with the
    module in ``_channels`` (``grpc`` or ``grpc.aio``), and owns it. ``interceptors`` wrap
    every call (``_open_channel`` / ``_adopt_channel``). Raises ``ValueError`` with neither a
    target nor a channel, with ``tls`` together with ``credentials`` or ``channel``, with an
    invalid static ``token``, with ``token`` together with an ``authorization`` entry in
    ``metadata``, with an interceptor the channel cannot take, or with a ``retry`` that is
    neither a ``RetryPolicy`` nor None. ``_call_metadata()`` is the metadata of one attempt
    (with ``authorization: Bearer <token>`` when a token is set; a token function is called
    once per attempt), ``_call_timeout(timeout)`` the deadline of one call across its attempts
    (``timeout``, else the client's default). ``retry`` (default ``DEFAULT_RETRY``; None: off)
    drives ``_retrier``, whose counters are ``stats``. The token never appears in an error
    message. A channel the client opens gets ``options`` (grpcio channel options, ``(name,
    value)`` pairs) plus the defaults the caller did not set: ``DEFAULT_MAX_RECEIVE_BYTES``,
    ``DEFAULT_RECONNECT_BACKOFF_MS`` and ``DEFAULT_KEEPALIVE`` (HTTP/2 keepalive PINGs). A
    ``channel`` passed in keeps its own settings: none of these defaults reach it.
    """

    #: Largest response the client accepts by default (grpcio's own default is 4 MiB). The server
    #: stores up to ``--max-session-bytes`` (64 MiB by default) per session and GetSnapshot returns
    #: the whole state, so the client accepts that much and some framing headroom.
    DEFAULT_MAX_RECEIVE_BYTES: ClassVar[int] = 128 * 1024 * 1024

    #: grpcio's reconnect backoff by default, in ms: a channel whose connection broke dials again
    #: after 0.1 s, then at growing intervals of at most 1 s (grpcio's own defaults are 1 s and
    #: 120 s, so a client reached a restarted agentd only seconds after it was back, often missing
    #: it). A caller who sets either option in ``options`` gets grpcio's behaviour for the other.
    DEFAULT_RECONNECT_BACKOFF_MS: ClassVar[Tuple[Tuple[str, int], ...]] = (
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    )

    #: HTTP/2 keepalive by default, as the Go and TypeScript clients and agentd itself
    #: (``--keepalive-interval-ms`` / ``--keepalive-timeout-ms``): while a call is open the
    #: channel sends a PING every 30 s, and a PING unanswered for 20 s closes the connection, so
    #: a call whose server vanished without closing it (a crashed host, a dropped network path:
    #: no FIN, no RST) fails with UNAVAILABLE instead of waiting forever. grpcio sends no
    #: keepalive PINGs by default. What grpc core needs besides the two keepalive options:
    #: ``grpc.http2.ping_timeout_ms`` (chttp2's ``GRPC_ARG_PING_TIMEOUT_MS``) is the wait it
    #: applies to an unanswered PING (grpcio 1.85 ignores ``grpc.keepalive_timeout_ms`` and
    #: waits a minute unless this is set; grpc/grpc#39239), and ``grpc.http2.max_pings_without_data`` 0 lifts its limit of 2
    #: PINGs while the client sends nothing, after which it pings a quiet stream (a Chat
    #: between turns, a reply that takes long) only once a minute. A channel without calls is
    #: not pinged (``grpc.keepalive_permit_without_calls`` stays 0).
    DEFAULT_KEEPALIVE: ClassVar[Tuple[Tuple[str, int], ...]] = (
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 20_000),
        ("grpc.http2.ping_timeout_ms", 20_000),
        ("grpc.http2.max_pings_without_data", 0),
    )

    #: ``grpc`` for the synchronous client, ``grpc.aio`` for the asyncio one.
    _channels: ClassVar[ModuleType] = grpc

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        token: TokenLike = None,
        tls: TLSLike = None,
        channel: Optional[ChannelT] = None,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Optional[Sequence[Tuple[str, Any]]] = None,
        metadata: Metadata = None,
        timeout: Optional[float] = None,
        interceptors: Interceptors = None,
        retry: Optional[RetryPolicy] = DEFAULT_RETRY,
    ) -> None:
        name = type(self).__name__
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ValueError(f"{name}: retry= takes a RetryPolicy or None (no retries)")
        self._retrier = Retrier(retry)
        if tls is not None and tls is not False:
            if channel is not None or credentials is not None:
                raise ValueError(f"{name}: pass tls= or credentials= / channel=, not both")
            tls_config = TLSConfig() if tls is True else tls
            if not isinstance(tls_config, TLSConfig):
                raise ValueError(f"{name}: tls= takes True or a TLSConfig")
            credentials = tls_config.credentials()
            options = [*(options or ()), *tls_config.channel_options()]
        self._metadata = tuple(metadata or ())
        if token is not None:
            if any(key.lower() == "authorization" for key, _ in self._metadata):
                raise ValueError(f"{name}: pass the token as token= or in metadata, not both")
            if not callable(token) and bearer_value(token) is None:
                raise ValueError(f"{name}: the token is empty or has a character that is not visible ASCII")
        self._token = token
        if channel is None:
            if not target:
                raise ValueError(f"{name} needs a target like '127.0.0.1:50051' or a channel")
            options = with_default_keepalive(with_default_reconnect(with_default_limits(options)))
            channel = self._open_channel(target, credentials, options, tuple(interceptors or ()))
            self._owns_channel = True
        else:
            channel = self._adopt_channel(channel, tuple(interceptors or ()))
            self._owns_channel = False
        self._channel: ChannelT = channel
        self._stub = agent_service_pb2_grpc.AgentServiceStub(channel)
        self._timeout = timeout

    def _open_channel(
        self,
        target: str,
        credentials: Optional[grpc.ChannelCredentials],
        options: List[Tuple[str, Any]],
        interceptors: Tuple[Any, ...],
    ) -> ChannelT:
        """A new channel to ``target`` with ``interceptors`` (grpcio: intercepted afterwards)."""
        check_interceptors(interceptors)  # before opening a channel that would be left open
        if credentials is not None:
            channel = self._channels.secure_channel(target, credentials, options=options)
        else:
            channel = self._channels.insecure_channel(target, options=options)
        return self._adopt_channel(channel, interceptors)

    def _adopt_channel(self, channel: ChannelT, interceptors: Tuple[Any, ...]) -> ChannelT:
        """The caller's ``channel`` with ``interceptors``."""
        return intercept_channel(channel, interceptors)  # type: ignore[arg-type,return-value]

    @property
    def channel(self) -> ChannelT:
        """The underlying grpcio channel (e.g. for the generated stubs directly)."""
        return self._channel

    @property
    def stats(self) -> ClientStats:
        """The client's counters: ``stats.retries`` is the number of retries made so far."""
        return self._retrier.stats

    @property
    def retry_policy(self) -> Optional[RetryPolicy]:
        """The retry policy of every call (None: retries are off)."""
        return self._retrier.policy

    def _call_metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The metadata of one call: ``metadata`` plus the token's ``authorization`` entry.
        Raises ``UnauthenticatedError`` when a token function returns no usable token."""
        if self._token is None:
            return self._metadata
        token = self._token() if callable(self._token) else self._token
        value = bearer_value(token)
        if value is None:
            raise UnauthenticatedError(
                "the token function returned an empty token or one with a character that is "
                "not visible ASCII"
            )
        return (*self._metadata, ("authorization", value))

    def _call_timeout(self, timeout: Optional[float]) -> Optional[float]:
        """The deadline of one unary call, across its attempts: ``timeout``, else the client's
        default."""
        return timeout if timeout is not None else self._timeout


#: grpcio's client interceptor classes (``grpc.intercept_channel`` takes these).
_GRPC_CLIENT_INTERCEPTORS = (
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
)


def intercept_channel(channel: grpc.Channel, interceptors: Sequence[Any]) -> grpc.Channel:
    """``channel`` with ``interceptors`` (the first outermost), each a grpcio client interceptor
    or one of OpenTelemetry's ``grpcext`` API (``intercept_unary`` / ``intercept_stream``, what
    ``opentelemetry.instrumentation.grpc.client_interceptor()`` returns). Raises ``ValueError``
    for anything else."""
    check_interceptors(interceptors)
    for interceptor in reversed(interceptors):
        if isinstance(interceptor, _GRPC_CLIENT_INTERCEPTORS):
            channel = grpc.intercept_channel(channel, interceptor)
        else:
            from opentelemetry.instrumentation.grpc import grpcext  # only when asked for

            channel = grpcext.intercept_channel(channel, interceptor)
    return channel


def check_interceptors(interceptors: Sequence[Any]) -> None:
    """Raises ``ValueError`` unless every interceptor is one ``intercept_channel`` takes."""
    for interceptor in interceptors:
        if not isinstance(interceptor, _GRPC_CLIENT_INTERCEPTORS) and not (
            hasattr(interceptor, "intercept_unary") or hasattr(interceptor, "intercept_stream")
        ):
            raise ValueError(
                f"interceptors: {type(interceptor).__name__} is not a grpc client interceptor "
                "(grpc.UnaryUnaryClientInterceptor, ... or OpenTelemetry's client_interceptor())"
            )


def with_default_limits(options: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, Any]]:
    """``options`` plus ``grpc.max_receive_message_length`` = ``ClientBase.DEFAULT_MAX_RECEIVE_BYTES``
    unless the caller set it (the caller's value always wins)."""
    merged = list(options or ())
    if not any(name == "grpc.max_receive_message_length" for name, _ in merged):
        merged.append(("grpc.max_receive_message_length", ClientBase.DEFAULT_MAX_RECEIVE_BYTES))
    return merged


def with_default_reconnect(options: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, Any]]:
    """``options`` plus ``ClientBase.DEFAULT_RECONNECT_BACKOFF_MS`` unless the caller set
    ``grpc.initial_reconnect_backoff_ms`` or ``grpc.max_reconnect_backoff_ms`` (then ``options``
    as given: the caller's reconnect settings always win)."""
    merged = list(options or ())
    names = {name for name, _ in ClientBase.DEFAULT_RECONNECT_BACKOFF_MS}
    if not any(name in names for name, _ in merged):
        merged.extend(ClientBase.DEFAULT_RECONNECT_BACKOFF_MS)
    return merged


def with_default_keepalive(options: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, Any]]:
    """``options`` plus each entry of ``ClientBase.DEFAULT_KEEPALIVE`` whose option the caller
    did not set: the caller's value always wins, option by option (setting
    ``grpc.keepalive_time_ms`` alone keeps the default timeout). A caller's
    ``grpc.keepalive_timeout_ms`` is also the default ``grpc.http2.ping_timeout_ms``, the
    wait grpc core applies, so that timeout is the one in effect."""
    merged = list(options or ())
    given = dict(merged)
    for name, value in ClientBase.DEFAULT_KEEPALIVE:
        if name in given:
            continue
        if name == "grpc.http2.ping_timeout_ms" and "grpc.keepalive_timeout_ms" in given:
            value = given["grpc.keepalive_timeout_ms"]
        merged.append((name, value))
    return merged
