"""``AsyncAgentClient``: the asyncio agentd client over a ``grpc.aio`` channel.

Mirrors :class:`agentd_client.AgentClient` method for method; every RPC method is a
coroutine (``watch_snapshot`` is an async iterator) and raises the same ``AgentdError``
subclasses.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Tuple

import grpc
import grpc.aio

from agentd.v1 import agent_pb2, agent_service_pb2, agent_service_pb2_grpc, state_pb2

from .aio_conversation import AsyncConversation, AsyncTurn
from .client import TERMINAL_STATUSES
from .errors import TurnFailedError, error_from_rpc
from .inputs import InputLike, StateLike, build_init, build_input
from .json_values import message_text

__all__ = ["AsyncAgentClient", "AsyncConversation", "AsyncTurn"]

Metadata = Optional[Sequence[Tuple[str, str]]]


class AsyncAgentClient:
    """Talks to one agentd server over gRPC on asyncio. Create it inside a running event
    loop; ``async with AsyncAgentClient("127.0.0.1:50051") as client`` closes the channel.
    Options as for :class:`agentd_client.AgentClient`."""

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        channel: Optional[grpc.aio.Channel] = None,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Optional[Sequence[Tuple[str, Any]]] = None,
        metadata: Metadata = None,
        timeout: Optional[float] = None,
    ) -> None:
        if channel is None:
            if not target:
                raise ValueError("AsyncAgentClient needs a target like '127.0.0.1:50051' or a channel")
            if credentials is not None:
                channel = grpc.aio.secure_channel(target, credentials, options=options)
            else:
                channel = grpc.aio.insecure_channel(target, options=options)
            self._owns_channel = True
        else:
            self._owns_channel = False
        self._channel = channel
        self._stub = agent_service_pb2_grpc.AgentServiceStub(channel)
        self._metadata = tuple(metadata or ())
        self._timeout = timeout

    async def close(self) -> None:
        """Closes the channel if this client created it. Idempotent."""
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
        timeout: Optional[float] = None,
    ) -> AsyncConversation:
        """Opens a conversation with ``agent`` (sources as in ``AgentClient.chat``)."""
        init = build_init(agent, session_id=session_id, snapshot_id=snapshot_id, state=state)
        conversation = AsyncConversation(self._stub, init, metadata=self._metadata, timeout=timeout)
        return conversation

    async def run(
        self,
        agent: str,
        input: Optional[InputLike] = None,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        detach: bool = False,
        metadata: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> agent_pb2.AgentOutput:
        """Runs one turn and returns its ``AgentOutput`` (in-band failures returned)."""
        request = agent_service_pb2.RunRequest(
            init=build_init(agent, session_id=session_id, snapshot_id=snapshot_id, state=state),
            input=build_input(input, metadata=metadata, detach=detach),
        )
        return (await self._unary(self._stub.Run, request, timeout)).output

    async def run_text(
        self,
        agent: str,
        text: str,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        timeout: Optional[float] = None,
    ) -> str:
        """Runs one turn with a user text and returns the reply text; raises
        ``TurnFailedError`` when the turn failed in-band."""
        output = await self.run(
            agent, text, session_id=session_id, snapshot_id=snapshot_id, state=state, timeout=timeout
        )
        if output.finish_reason == state_pb2.FINISH_REASON_FAILED:
            raise TurnFailedError(output)
        return message_text(output.message)

    async def get_snapshot(
        self,
        agent: str,
        snapshot_id: Optional[str] = None,
        *,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> state_pb2.Snapshot:
        """Returns a snapshot by ID, or the latest of ``session_id`` (transform applied)."""
        if not snapshot_id and not session_id:
            raise ValueError("get_snapshot needs snapshot_id or session_id")
        request = agent_service_pb2.GetSnapshotRequest(
            agent=agent, snapshot_id=snapshot_id or "", session_id=session_id or ""
        )
        return (await self._unary(self._stub.GetSnapshot, request, timeout)).snapshot

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
        request = agent_service_pb2.ListSnapshotsRequest(
            agent=agent,
            session_id=session_id,
            page_size=page_size,
            page_token=page_token,
            include_state=include_state,
        )
        return await self._unary(self._stub.ListSnapshots, request, timeout)

    async def watch_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> AsyncIterator[agent_service_pb2.WatchSnapshotResponse]:
        """Yields the snapshot's status now and on every change; ends after a terminal
        status or when the server ends the stream."""
        request = agent_service_pb2.WatchSnapshotRequest(agent=agent, snapshot_id=snapshot_id)
        call = self._stub.WatchSnapshot(request, metadata=self._metadata, timeout=timeout)
        try:
            async for update in call:
                yield update
                if update.status in TERMINAL_STATUSES:
                    return
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        finally:
            call.cancel()

    async def abort(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> agent_service_pb2.AbortResponse:
        """Aborts a pending snapshot; ``status`` is ABORTED or the existing terminal status."""
        request = agent_service_pb2.AbortRequest(agent=agent, snapshot_id=snapshot_id)
        return await self._unary(self._stub.Abort, request, timeout)

    async def list_agents(self, *, timeout: Optional[float] = None) -> List[agent_pb2.AgentInfo]:
        """Returns every served agent."""
        response = await self._unary(
            self._stub.ListAgents, agent_service_pb2.ListAgentsRequest(), timeout
        )
        return list(response.agents)

    async def _unary(self, method: Any, request: Any, timeout: Optional[float]) -> Any:
        try:
            return await method(
                request,
                metadata=self._metadata,
                timeout=timeout if timeout is not None else self._timeout,
            )
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
