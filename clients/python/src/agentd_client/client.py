"""``AgentClient``: the synchronous agentd client over a grpcio channel."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

import grpc

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from . import service_calls as calls
from .attached_run import AttachedRun
from .client_base import ClientBase
from .conversation import Conversation
from .enums import SnapshotStatus
from .errors import error_from_rpc
from .inputs import BusyPolicyLike, InputLike, PatchLike, StateLike, TimeLike, TTLLike, build_init, build_input
from .retrier import Deadline
from .service_calls import TERMINAL_STATUSES
from .snapshot_watch import watch_statuses

__all__ = ["AgentClient", "TERMINAL_STATUSES"]


class AgentClient(ClientBase[grpc.Channel]):
    """Talks to one agentd server over gRPC (HTTP/2).

    ``AgentClient("127.0.0.1:50051")`` opens an insecure channel. ``tls=TLSConfig(ca=...,
    cert=..., key=..., server_name=...)`` (or ``tls=True`` for the default roots) opens a TLS
    channel, for an agentd started with ``--tls-cert`` (``cert``/``key``: the client
    certificate for ``--tls-client-ca``); ``credentials=`` takes your own
    ``grpc.ChannelCredentials`` instead, and ``channel=`` your own channel (then ``close``
    leaves it open). ``token="..."`` sends ``authorization: Bearer <token>`` with every call
    (a function returning the token is called for every call); it is never put in an error
    message. ``metadata`` (other ``(key, value)`` pairs) is sent with every call;
    ``timeout`` (seconds) is the default deadline of unary calls. ``interceptors`` wrap every
    call, the first outermost: grpcio client interceptors, or OpenTelemetry's
    ``opentelemetry.instrumentation.grpc.client_interceptor()``, which sends the current
    trace context (``traceparent``) with each call; ``GrpcInstrumentorClient().instrument()``
    before creating the client does the same for every channel. ``retry`` (default
    ``RetryPolicy()``; ``None``: off) retries what may not have happened - UNAVAILABLE, a
    broken connection, a stream that ends early - with the same request IDs, so the server
    runs each input once; conversations reconnect, watches and attachments re-open;
    ``stats.retries`` counts the retries. ``options`` (grpcio channel options, ``(name,
    value)`` pairs) go to a channel the client opens, over its defaults: a 128 MiB receive
    limit, redials 0.1-1 s apart, and HTTP/2 keepalive PINGs while a call is open (every 30 s;
    one unanswered for 20 s closes the connection, so a call whose server vanished without
    closing it fails UNAVAILABLE instead of hanging); a caller's value for one of these options
    replaces its default (``ClientBase.DEFAULT_KEEPALIVE`` and the others). A ``channel=`` of
    your own keeps its own settings. Every method raises an ``AgentdError`` subclass
    carrying the call's ``grpc.StatusCode``. Use as a context manager
    to close the channel. Thread-safe (the channel is); conversations are not.
    """

    def close(self) -> None:
        """Closes the channel if this client created it, and stops retrying. Idempotent."""
        self._retrier.close()
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> "AgentClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def chat(
        self,
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
        timeout: Optional[float] = None,
    ) -> Conversation:
        """Opens a multi-turn conversation with ``agent``.

        Resume a server-managed agent's session with ``session_id`` (its latest snapshot),
        ``snapshot_id`` (a branch) or both; continue a client-managed agent with ``state``
        (a previous ``conversation.state``); pass none for a fresh session. ``timeout``
        bounds the whole conversation (default: none).

        ``busy_policy`` says what to do when another invocation holds the session (an open
        chat, a run in progress, unfinished detached work): ``"reject"`` fails with
        ``AbortedError``, ``"enqueue"`` waits for the session (bounded by ``timeout``:
        ``DeadlineExceededError``), ``"interrupt"`` stops the running invocation (it ends with
        ``AbortedError``). Also an ``agentd.v1.BusyPolicy`` value; ``None`` is the server's
        default (REJECT unless it sets ``--busy-policy``). Unknown values raise ``ValueError``.
        While this conversation is open it holds the session.

        ``labels`` (``{"key": "value"}``) and ``ttl`` (idle time-to-live: a
        ``datetime.timedelta`` or seconds) apply to a NEW session only: find it again with
        ``list_sessions(labels=...)``; the server deletes it ``ttl`` after its last update
        (``None``: the server's ``--session-ttl``, none by default). Change both later with
        ``update_session``.

        ``state_patch`` / ``messages_patch`` fork from an edited past: RFC 6902 operations on
        the resumed snapshot's custom state / history, applied before the first turn (see
        ``build_init``).
        """
        init = build_init(
            agent,
            session_id=session_id,
            snapshot_id=snapshot_id,
            state=state,
            busy_policy=busy_policy,
            labels=labels,
            ttl=ttl,
            state_patch=state_patch,
            messages_patch=messages_patch,
        )
        return Conversation(
            self._stub, init, metadata=self._call_metadata, timeout=timeout, retrier=self._retrier
        )

    def run(
        self,
        agent: str,
        input: Optional[InputLike] = None,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        busy_policy: Optional[BusyPolicyLike] = None,
        labels: Optional[Mapping[str, str]] = None,
        ttl: Optional[TTLLike] = None,
        state_patch: Optional[PatchLike] = None,
        messages_patch: Optional[PatchLike] = None,
        detach: bool = False,
        metadata: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> agent_pb2.AgentOutput:
        """Runs one turn and returns its ``AgentOutput`` (in-band failures are returned with
        ``finish_reason`` FAILED, not raised). ``detach=True`` returns at once with the
        pending snapshot ID. ``metadata`` goes on the input message. ``busy_policy``,
        ``labels``, ``ttl``, ``state_patch`` and ``messages_patch`` as in ``chat``. ``request_id`` is the input's idempotency key
        (default: a new UUID): every retry sends the same one, so the server runs the turn
        once; a later ``run`` with the same ID and input returns the same output.
        ``timeout`` bounds the call with all its retries."""
        call = calls.run_call(
            agent,
            input,
            session_id=session_id,
            snapshot_id=snapshot_id,
            state=state,
            detach=detach,
            metadata=metadata,
            busy_policy=busy_policy,
            labels=labels,
            ttl=ttl,
            state_patch=state_patch,
            messages_patch=messages_patch,
            request_id=request_id,
        )
        return self._unary(call, timeout)

    def run_text(
        self,
        agent: str,
        text: str,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        busy_policy: Optional[BusyPolicyLike] = None,
        labels: Optional[Mapping[str, str]] = None,
        ttl: Optional[TTLLike] = None,
        timeout: Optional[float] = None,
    ) -> str:
        """Runs one turn with a user text and returns the reply's text. Raises
        ``TurnFailedError`` (with the in-band status code and the full output) when the
        turn failed."""
        output = self.run(
            agent,
            text,
            session_id=session_id,
            snapshot_id=snapshot_id,
            state=state,
            busy_policy=busy_policy,
            labels=labels,
            ttl=ttl,
            timeout=timeout,
        )
        return calls.reply_text(output)

    def get_snapshot(
        self,
        agent: str,
        snapshot_id: Optional[str] = None,
        *,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> state_pb2.Snapshot:
        """Returns a snapshot by ID, or the latest snapshot of ``session_id`` (with both, the
        session is asserted). Its ``state`` has the agent's state transform applied; use
        ``state_custom(snapshot.state)`` for the custom state as plain Python."""
        return self._unary(calls.get_snapshot_call(agent, snapshot_id, session_id), timeout)

    def list_snapshots(
        self,
        agent: str,
        session_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        include_state: bool = False,
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.ListSnapshotsResponse:
        """Returns one page of a session's snapshots, newest first (``snapshots`` and
        ``next_page_token``, empty on the last page). ``page_size`` 0 means the server's
        default (50)."""
        call = calls.list_snapshots_call(
            agent,
            session_id,
            page_size=page_size,
            page_token=page_token,
            include_state=include_state,
        )
        return self._unary(call, timeout)

    def iter_snapshots(
        self, agent: str, session_id: str, *, page_size: int = 0, include_state: bool = False
    ) -> Iterator[state_pb2.Snapshot]:
        """Yields every snapshot of a session, newest first, fetching pages as needed."""
        token = ""
        while True:
            page = self.list_snapshots(
                agent, session_id, page_size=page_size, page_token=token, include_state=include_state
            )
            yield from page.snapshots
            token = page.next_page_token
            if not token:
                return

    def watch_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> Iterator[agent_service_pb2.WatchSnapshotResponse]:
        """Yields the snapshot's status at once and on every change, and ends after a
        terminal status (completed, failed, aborted, expired) or when the server ends the
        stream. A broken stream is reopened with the retry policy (within ``timeout``); a
        reopened watch's first status is skipped when it repeats the last one yielded.
        Leaving the loop early cancels the call."""
        request = calls.watch_snapshot_request(agent, snapshot_id)

        def open_call(remaining: Optional[float]) -> Any:
            return self._stub.WatchSnapshot(request, metadata=self._call_metadata(), timeout=remaining)

        return watch_statuses(open_call, self._retrier, timeout)

    def wait_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> SnapshotStatus:
        """Watches a snapshot until it settles and returns its last status (e.g.
        ``SNAPSHOT_STATUS_COMPLETED``, a :class:`SnapshotStatus`)."""
        status = state_pb2.SNAPSHOT_STATUS_UNSPECIFIED
        for update in self.watch_snapshot(agent, snapshot_id, timeout=timeout):
            status = update.status
        return SnapshotStatus.of(status)

    def abort(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> SnapshotStatus:
        """Aborts a pending (detached) snapshot and returns its :class:`SnapshotStatus`:
        ``SNAPSHOT_STATUS_ABORTED`` on success, or the terminal status it already had (as the
        TypeScript and Go clients). It used to return the ``AbortResponse``; its
        ``.status`` still works on the result, with a ``DeprecationWarning``."""
        return self._unary(calls.abort_call(agent, snapshot_id), timeout)

    def send_invocation_input(
        self,
        agent: str,
        snapshot_id: str,
        input: agent_pb2.AgentInput,
        *,
        timeout: Optional[float] = None,
    ) -> agent_pb2.InputAck:
        """Sends a control input to detached work (its pending ``snapshot_id``):
        ``AgentInput(cancel=True)`` cancels its running turn (the work goes on with its next
        input, or ends); ``steer=True`` with a message steers it. Returns the server's
        ``InputAck``. Sent once and never retried (a retried cancel could stop a later turn).
        Raises ``NotFoundError`` for an unknown snapshot, ``FailedPreconditionError`` when the
        work has ended or runs on another server instance."""
        request = agent_service_pb2.SendInvocationInputRequest(
            agent=agent, snapshot_id=snapshot_id, input=build_input(input)
        )
        try:
            response = self._stub.SendInvocationInput(
                request, metadata=self._call_metadata(), timeout=self._call_timeout(timeout)
            )
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        return response.ack

    def attach(
        self, agent: str, snapshot_id: str, *, after_sequence: int = 0, timeout: Optional[float] = None
    ) -> AttachedRun:
        """Attaches to detached work: ``snapshot_id`` is the pending snapshot its DETACHED
        output returned (``conversation.detach()``, ``run(..., detach=True)``). Iterate the
        returned :class:`AttachedRun` for the chunks whose ``sequence`` is greater than
        ``after_sequence`` (0: every chunk streamed after detach) - those the server recorded
        first, then the live ones - and call ``output()`` for the work's ``AgentOutput`` once
        it ended (``finish_reason`` STOP, FAILED with ``error``, or ABORTED). Any server
        sharing the store answers. After a dropped connection, attach again with
        ``after_sequence=run.last_sequence`` to receive the rest exactly once. ``timeout``
        bounds the whole stream (default: none).

        Raised while reading: ``NotFoundError`` (unknown, or another owner's or agent's
        snapshot), ``FailedPreconditionError`` (not detached work, or its chunks are past the
        server's ``--chunk-retention``), ``UnavailableError`` (the work stopped sending
        heartbeats before it ended: it reads as expired)."""
        calls.attach_invocation_request(agent, snapshot_id, after_sequence)  # checks after_sequence

        def open_call(after: int, remaining: Optional[float]) -> Any:
            request = calls.attach_invocation_request(agent, snapshot_id, after)
            return self._stub.AttachInvocation(request, metadata=self._call_metadata(), timeout=remaining)

        return AttachedRun(
            open_call, agent, snapshot_id, after_sequence, retrier=self._retrier, timeout=timeout
        )

    def list_agents(self, *, timeout: Optional[float] = None) -> List[agent_pb2.AgentInfo]:
        """Returns every served agent: name, description, state management, abortable, and
        the JSON Schema of its custom state (``struct_to_dict(info.state_schema)``)."""
        return self._unary(calls.list_agents_call(), timeout)

    def list_sessions(
        self,
        agent: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        updated_after: Optional[TimeLike] = None,
        page_size: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[agent_service_pb2.Session]:
        """Yields every session of the caller (its tenant, with authentication),
        newest-updated first, fetching pages of ``page_size`` (``None``: the server's 50) as
        needed; each session is yielded once even while others are created.

        Filters: ``agent``; ``labels`` (sessions carrying each given label with exactly that
        value); ``updated_after`` (a ``datetime``, naive meaning local time, or epoch
        seconds). Each item is the session's head: ``session_id``, ``agent``, ``labels``,
        ``turn_count``, ``head_snapshot_id``, ``head_status``, ``created_at``,
        ``updated_at``, ``expires_at`` (unset: never) and ``ttl``. ``timeout`` bounds each
        page's call. Errors are raised while iterating."""
        request = calls.list_sessions_request(
            agent, labels=labels, updated_after=updated_after, page_size=page_size
        )
        return self._iter_sessions(request, timeout)

    def _iter_sessions(
        self, request: agent_service_pb2.ListSessionsRequest, timeout: Optional[float]
    ) -> Iterator[agent_service_pb2.Session]:
        while True:
            page = self._unary(calls.list_sessions_call(request), timeout)
            yield from page.sessions
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def list_sessions_page(
        self,
        agent: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        updated_after: Optional[TimeLike] = None,
        page_size: Optional[int] = None,
        page_token: str = "",
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.ListSessionsResponse:
        """Returns one page of ``list_sessions``: ``sessions`` and ``next_page_token``
        (empty on the last page; pass it back as ``page_token`` with the same filters)."""
        request = calls.list_sessions_request(
            agent, labels=labels, updated_after=updated_after, page_size=page_size, page_token=page_token
        )
        return self._unary(calls.list_sessions_call(request), timeout)

    def get_session(self, session_id: str, *, timeout: Optional[float] = None) -> agent_service_pb2.Session:
        """Returns the head of a session. Raises ``NotFoundError`` for an unknown, deleted,
        expired or another tenant's session."""
        return self._unary(calls.get_session_call(session_id), timeout)

    def update_session(
        self,
        session_id: str,
        *,
        set_labels: Optional[Mapping[str, str]] = None,
        remove_labels: Optional[Iterable[str]] = None,
        ttl: Optional[TTLLike] = None,
        clear_ttl: bool = False,
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.Session:
        """Adds or overwrites ``set_labels``, then removes the ``remove_labels`` keys; sets a
        new idle time-to-live ``ttl`` counted from now (a ``timedelta`` or seconds), or with
        ``clear_ttl=True`` removes it (the session no longer expires). Returns the updated
        head. Raises ``NotFoundError`` for an unknown session and ``InvalidArgumentError``
        for bad labels or ``ttl`` together with ``clear_ttl``."""
        call = calls.update_session_call(
            session_id, set_labels=set_labels, remove_labels=remove_labels, ttl=ttl, clear_ttl=clear_ttl
        )
        return self._unary(call, timeout)

    def delete_session(
        self, session_id: str, *, request_id: Optional[str] = None, timeout: Optional[float] = None
    ) -> bool:
        """Aborts the session's running and pending work, then removes it and every snapshot
        of it; afterwards every call naming it (or one of its snapshots) raises
        ``NotFoundError``. Idempotent: returns ``False`` when there was nothing to delete
        (already deleted, expired, never existed, or another tenant's). ``request_id``
        (default: a new UUID) makes a retry answer as the first attempt did."""
        return self._unary(calls.delete_session_call(session_id, request_id), timeout)

    def _unary(self, call: calls.UnaryCall, timeout: Optional[float]) -> Any:
        """Calls ``call`` with the retry policy; ``timeout`` bounds every attempt together."""
        method = getattr(self._stub, call.method)

        def attempt(deadline: Deadline) -> Any:
            try:
                return method(call.request, metadata=self._call_metadata(), timeout=deadline.remaining())
            except grpc.RpcError as err:
                raise error_from_rpc(err) from err

        return call.shape(self._retrier.call(call.method, attempt, self._call_timeout(timeout)))
