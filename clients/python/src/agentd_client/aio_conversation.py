"""An asyncio multi-turn conversation over one bidi ``Chat`` stream (``grpc.aio``)."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, Optional

import grpc
import grpc.aio

from agentd.v1 import agent_pb2, agent_service_pb2, agent_service_pb2_grpc

from .client_base import Metadata
from .conversation_core import ConversationCore
from .aio_stream_write import write_request
from .errors import error_from_rpc
from .inputs import InputLike, build_input
from .turn import TurnRecord

__all__ = ["AsyncConversation", "AsyncTurn"]


class AsyncTurn(TurnRecord):
    """A turn of an :class:`AsyncConversation`: ``async for chunk in turn`` yields its chunks
    and ends after TurnEnd; ``await turn.wait()`` reads to the end and returns the TurnEnd.
    Same guarantees as the synchronous :class:`~agentd_client.Turn`."""

    def __init__(self, conversation: "AsyncConversation") -> None:
        super().__init__()
        self._conversation = conversation

    async def __aiter__(self) -> AsyncIterator[agent_pb2.AgentStreamChunk]:
        while True:
            if self._buffer:
                yield self._buffer.popleft()
                continue
            if self._done:
                return
            await self._conversation._read_next()

    async def wait(self) -> Optional[agent_pb2.TurnEnd]:
        """Reads until the turn ends; returns its TurnEnd (None if the conversation ended
        first, e.g. after detach)."""
        async for _ in self:
            pass
        return self.turn_end


class AsyncConversation(ConversationCore):
    """One ``Chat`` call on asyncio. ``turn = await conv.send(text)``, then
    ``async for chunk in turn`` or ``await turn.wait()``; ``await conv.output()`` half-closes
    and returns the final ``AgentOutput`` (idempotent); ``await conv.detach()`` hands the work
    to the server. The ``init`` request goes out with the first input (or on ``output()``).
    Use ``async with``: a clean exit awaits ``output()``, an exception cancels the call.
    Errors surface as ``AgentdError`` on reads.
    """

    def __init__(
        self,
        stub: agent_service_pb2_grpc.AgentServiceStub,
        init: agent_pb2.AgentInit,
        *,
        metadata: Metadata = None,
        timeout: Optional[float] = None,
    ) -> None:
        super().__init__(init)
        self._init: Optional[agent_pb2.AgentInit] = init
        self._call: grpc.aio.StreamStreamCall = stub.Chat(metadata=metadata, timeout=timeout)
        self._read_lock = asyncio.Lock()

    async def send(
        self, input: Optional[InputLike] = None, *, metadata: Optional[Dict[str, Any]] = None
    ) -> AsyncTurn:
        """Sends one input and returns its :class:`AsyncTurn`. Raises
        ``ConversationClosedError`` once the conversation ended."""
        self._ensure_accepting_input()
        turn = AsyncTurn(self)
        self._pending.append(turn)
        await self._write(build_input(input, metadata=metadata))
        return turn

    async def detach(
        self, input: Optional[InputLike] = None, *, metadata: Optional[Dict[str, Any]] = None
    ) -> agent_pb2.AgentOutput:
        """Hands the rest of the work to the server; returns the output with finish_reason
        FINISH_REASON_DETACHED and the pending snapshot ID."""
        self._ensure_accepting_input()
        await self._write(build_input(input, metadata=metadata, detach=True))
        return await self.output()

    async def output(self) -> agent_pb2.AgentOutput:
        """Half-closes, reads every remaining turn and returns the final ``AgentOutput``.
        Idempotent; in-band failures are returned (``finish_reason`` FAILED), not raised."""
        output = self._settled_output()
        if output is not None:
            return output
        if not self._input_closed:
            self._input_closed = True
            if self._init is not None:
                await self._write(None)
            try:
                await self._call.done_writing()
            except grpc.RpcError:
                pass  # the read below reports the call's status
        while self._output is None:
            await self._read_next()
        return self._output

    def close(self) -> None:
        """Cancels the call unless the conversation already ended. Idempotent."""
        if self._closed_by_client():
            self._call.cancel()

    async def __aenter__(self) -> "AsyncConversation":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None and not self.finished:
            await self.output()
        else:
            self.close()

    async def _write(self, input: Optional[agent_pb2.AgentInput]) -> None:
        request = agent_service_pb2.ChatRequest()
        if self._init is not None:
            request.init.CopyFrom(self._init)
            self._init = None
        if input is not None:
            request.input.CopyFrom(input)
        await write_request(self._call, request)  # an ended call: the next read reports why

    async def _read_next(self) -> None:
        async with self._read_lock:
            if self._settled_output() is not None:
                return
            try:
                response = await self._call.read()
            except grpc.RpcError as err:
                raise self._fail(error_from_rpc(err)) from err
            if response is grpc.aio.EOF:
                raise self._stream_broke()
            self._route(response)
            if self._output is not None:
                await self._drain_after_output()

    async def _drain_after_output(self) -> None:
        try:
            while await self._call.read() is not grpc.aio.EOF:
                pass
        except grpc.RpcError:
            pass  # the output is settled; a late trailer error changes nothing
