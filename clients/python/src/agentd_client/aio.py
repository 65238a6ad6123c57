"""``AsyncAgentClient``: the asyncio agentd client over a ``grpc.aio`` channel.

Mirrors :class:`agentd_client.AgentClient` method for method; every RPC method is a
coroutine (``watch_snapshot``, ``iter_snapshots`` and ``list_sessions`` are async iterators;
``attach`` returns an ``AsyncAttachedRun``) and raises the same ``AgentdError`` subclasses.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Iterable, List, Mapping, Optional, Tuple

import grpc
import grpc.aio

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from . import service_calls as calls
from .aio_conversation import AsyncConversation, AsyncTurn
from .attached_run import AsyncAttachedRun
from .client_base import ClientBase
from .enums import SnapshotStatus
from .errors import error_from_rpc
from .inputs import BusyPolicyLike, InputLike, PatchLike, StateLike, TimeLike, TTLLike, build_init, build_input
from .retrier import Deadline
from .snapshot_watch import watch_statuses_async

__all__ = ["AsyncAgentClient", "AsyncAttachedRun", "AsyncConversation", "AsyncTurn"]


class AsyncAgentClient(ClientBase[grpc.aio.Channel]):
    """Talks to one agentd server over gRPC on asyncio. Create it inside a running event
    loop; ``async with AsyncAgentClient("127.0.0.1:50051") as client`` closes the channel.
    Options (``retry`` and ``stats`` included) as for :class:`agentd_client.AgentClient`,
    except that ``interceptors`` are ``grpc.aio`` client interceptors (e.g. OpenTelemetry's
    ``aio_client_interceptors()``) and need a channel the client opens (a ``grpc.aio``
    channel takes them when created)."""

    _channels = grpc.aio

    def _open_channel(
        self,
        target: str,
        credentials: Optional[grpc.ChannelCredentials],
        options: List[Tuple[str, Any]],
        interceptors: Tuple[Any, ...],
    ) -> grpc.aio.Channel:
        extra = {"interceptors": list(interceptors)} if interceptors else {}
        if credentials is not None:
            return self._channels.secure_channel(target, credentials, options=options, **extra)
        return self._channels.insecure_channel(target, options=options, **extra)

    def _adopt_channel(self, channel: grpc.aio.Channel, interceptors: Tuple[Any, ...]) -> grpc.aio.Channel:
        if interceptors:
            raise ValueError(
                "AsyncAgentClient: a grpc.aio channel takes its interceptors when it is created: "
                "pass them to grpc.aio.insecure_channel / secure_channel, or pass a target instead "
                "of channel="
            )
        return channel

    async def close(self) -> None:
        """Closes the channel if this client created it, and stops retrying. Idempotent."""
        self._retrier.close()
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> "AsyncAgentClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

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
    ) -> AsyncConversation:
        """Opens a conversation with ``agent`` (sources, ``busy_policy``, ``labels`` and
        ``ttl`` as in ``AgentClient.chat``)."""
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
        return AsyncConversation(
            self._stub, init, metadata=self._call_metadata, timeout=timeout, retrier=self._retrier
        )

    async def run(
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
        """Runs one turn and returns its ``AgentOutput`` (in-band failures returned);
        ``busy_policy``, ``labels``, ``ttl`` and ``request_id`` as in ``AgentClient.run``."""
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
        return await self._unary(call, timeout)

    async def run_text(
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
        """Runs one turn with a user text and returns the reply text; raises
        ``TurnFailedError`` when the turn failed in-band."""
        output = await self.run(
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

    async def get_snapshot(
        self,
        agent: str,
        snapshot_id: Optional[str] = None,
        *,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> state_pb2.Snapshot:
        """Returns a snapshot by ID, or the latest of ``session_id`` (transform applied)."""
        return await self._unary(calls.get_snapshot_call(agent, snapshot_id, session_id), timeout)

    async def list_snapshots(
        self,
        agent: str,
        session_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        include_state: bool = False,
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.ListSnapshotsResponse:
        """Returns one page of a session's snapshots, newest first."""
        call = calls.list_snapshots_call(
            agent,
            session_id,
            page_size=page_size,
            page_token=page_token,
            include_state=include_state,
        )
        return await self._unary(call, timeout)

    async def iter_snapshots(
        self, agent: str, session_id: str, *, page_size: int = 0, include_state: bool = False
    ) -> AsyncIterator[state_pb2.Snapshot]:
        """Yields every snapshot of a session, newest first, fetching pages as needed."""
        token = ""
        while True:
            page = await self.list_snapshots(
                agent, session_id, page_size=page_size, page_token=token, include_state=include_state
            )
            for snapshot in page.snapshots:
                yield snapshot
            token = page.next_page_token
            if not token:
                return

    async def watch_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> AsyncIterator[agent_service_pb2.WatchSnapshotResponse]:
        """Yields the snapshot's status now and on every change; ends after a terminal
        status or when the server ends the stream. Reopened after a break as
        ``AgentClient.watch_snapshot`` is."""
        request = calls.watch_snapshot_request(agent, snapshot_id)

        def open_call(remaining: Optional[float]) -> Any:
            return self._stub.WatchSnapshot(request, metadata=self._call_metadata(), timeout=remaining)

        async for update in watch_statuses_async(open_call, self._retrier, timeout):
            yield update

    async def wait_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> SnapshotStatus:
        """Watches a snapshot until it settles and returns its last status (a
        :class:`SnapshotStatus`)."""
        status = state_pb2.SNAPSHOT_STATUS_UNSPECIFIED
        async for update in self.watch_snapshot(agent, snapshot_id, timeout=timeout):
            status = update.status
        return SnapshotStatus.of(status)

    async def abort(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> SnapshotStatus:
        """Aborts a pending snapshot; returns its :class:`SnapshotStatus` (ABORTED, or the
        terminal status it already had), as ``AgentClient.abort``."""
        return await self._unary(calls.abort_call(agent, snapshot_id), timeout)

    async def send_invocation_input(
        self,
        agent: str,
        snapshot_id: str,
        input: agent_pb2.AgentInput,
        *,
        timeout: Optional[float] = None,
    ) -> agent_pb2.InputAck:
        """Sends a control input to detached work (as ``AgentClient.send_invocation_input``):
        sent once, never retried."""
        request = agent_service_pb2.SendInvocationInputRequest(
            agent=agent, snapshot_id=snapshot_id, input=build_input(input)
        )
        try:
            response = await self._stub.SendInvocationInput(
                request, metadata=self._call_metadata(), timeout=self._call_timeout(timeout)
            )
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        return response.ack

    def attach(
        self, agent: str, snapshot_id: str, *, after_sequence: int = 0, timeout: Optional[float] = None
    ) -> AsyncAttachedRun:
        """Attaches to detached work (as ``AgentClient.attach``): ``async for chunk in run``
        yields the chunks after ``after_sequence``, ``await run.output()`` returns the work's
        output, ``run.last_sequence`` is where to attach again after a dropped connection."""
        calls.attach_invocation_request(agent, snapshot_id, after_sequence)  # checks after_sequence

        def open_call(after: int, remaining: Optional[float]) -> Any:
            request = calls.attach_invocation_request(agent, snapshot_id, after)
            return self._stub.AttachInvocation(request, metadata=self._call_metadata(), timeout=remaining)

        return AsyncAttachedRun(
            open_call, agent, snapshot_id, after_sequence, retrier=self._retrier, timeout=timeout
        )

    async def list_agents(self, *, timeout: Optional[float] = None) -> List[agent_pb2.AgentInfo]:
        """Returns every served agent."""
        return await self._unary(calls.list_agents_call(), timeout)

    def list_sessions(
        self,
        agent: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        updated_after: Optional[TimeLike] = None,
        page_size: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> AsyncIterator[agent_service_pb2.Session]:
        """An async iterator over every session of the caller, newest-updated first, pages
        fetched as needed (``async for session in client.list_sessions(labels=...)``);
        filters as in ``AgentClient.list_sessions``."""
        request = calls.list_sessions_request(
            agent, labels=labels, updated_after=updated_after, page_size=page_size
        )
        return self._iter_sessions(request, timeout)

    async def _iter_sessions(
        self, request: agent_service_pb2.ListSessionsRequest, timeout: Optional[float]
    ) -> AsyncIterator[agent_service_pb2.Session]:
        while True:
            page = await self._unary(calls.list_sessions_call(request), timeout)
            for session in page.sessions:
                yield session
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def list_sessions_page(
        self,
        agent: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        updated_after: Optional[TimeLike] = None,
        page_size: Optional[int] = None,
        page_token: str = "",
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.ListSessionsResponse:
        """Returns one page of ``list_sessions`` (``sessions``, ``next_page_token``)."""
        request = calls.list_sessions_request(
            agent, labels=labels, updated_after=updated_after, page_size=page_size, page_token=page_token
        )
        return await self._unary(calls.list_sessions_call(request), timeout)

    async def get_session(self, session_id: str, *, timeout: Optional[float] = None) -> agent_service_pb2.Session:
        """Returns the head of a session; ``NotFoundError`` when unknown, deleted or expired."""
        return await self._unary(calls.get_session_call(session_id), timeout)

    async def update_session(
        self,
        session_id: str,
        *,
        set_labels: Optional[Mapping[str, str]] = None,
        remove_labels: Optional[Iterable[str]] = None,
        ttl: Optional[TTLLike] = None,
        clear_ttl: bool = False,
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.Session:
        """Changes labels and time-to-live as in ``AgentClient.update_session``; returns the
        updated head."""
        call = calls.update_session_call(
            session_id, set_labels=set_labels, remove_labels=remove_labels, ttl=ttl, clear_ttl=clear_ttl
        )
        return await self._unary(call, timeout)

    async def delete_session(
        self, session_id: str, *, request_id: Optional[str] = None, timeout: Optional[float] = None
    ) -> bool:
        """Deletes a session and every snapshot of it; ``False`` when there was nothing to
        delete."""
        return await self._unary(calls.delete_session_call(session_id, request_id), timeout)

    async def _unary(self, call: calls.UnaryCall, timeout: Optional[float]) -> Any:
        """Calls ``call`` with the retry policy; ``timeout`` bounds every attempt together."""
        method = getattr(self._stub, call.method)

        async def attempt(deadline: Deadline) -> Any:
            try:
                return await method(call.request, metadata=self._call_metadata(), timeout=deadline.remaining())
            except grpc.RpcError as err:
                raise error_from_rpc(err) from err

        return call.shape(await self._retrier.call_async(call.method, attempt, self._call_timeout(timeout)))
