"""An asyncio multi-turn conversation over one bidi ``Chat`` stream (``grpc.aio``)."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Dict, Optional, Union

import grpc
import grpc.aio

from agentd.v1 import agent_pb2, agent_service_pb2, agent_service_pb2_grpc

from .client_base import Metadata
from .conversation_core import ConversationCore
from .aio_stream_write import write_request
from .errors import AgentdError, error_from_rpc
from .inputs import InputLike, build_input
from .retrier import Retrier
from .turn import TurnRecord
from .turn_control import SteerResult, cancel_input, steer_inputs

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

    async def cancel(self) -> agent_pb2.InputAck:
        """Cancels this turn while it runs, keeping the conversation; same guarantees as the
        synchronous :meth:`~agentd_client.Turn.cancel`."""
        return await self._conversation._cancel(self)


class AsyncConversation(ConversationCore):
    """One ``Chat`` call on asyncio. ``turn = await conv.send(text)``, then
    ``async for chunk in turn`` or ``await turn.wait()``; ``await conv.output()`` half-closes
    and returns the final ``AgentOutput`` (idempotent); ``await conv.detach()`` hands the work
    to the server. The ``init`` request goes out with the first input (or on ``output()``).
    Use ``async with``: a clean exit awaits ``output()``, an exception cancels the call.
    Errors surface as ``AgentdError`` on reads. A broken stream is reopened as the
    synchronous :class:`~agentd_client.Conversation` reopens it (same guarantees); cancelling
    the reading task is never retried.
    """

    def __init__(
        self,
        stub: agent_service_pb2_grpc.AgentServiceStub,
        init: agent_pb2.AgentInit,
        *,
        metadata: Union[Metadata, Callable[[], Metadata]] = None,
        timeout: Optional[float] = None,
        retrier: Optional[Retrier] = None,
    ) -> None:
        super().__init__(init, retrier=retrier, timeout=timeout)
        self._stub = stub
        self._metadata = metadata
        self._init: Optional[agent_pb2.AgentInit] = init
        self._call: grpc.aio.StreamStreamCall = self._open()
        self._read_lock = asyncio.Lock()
        # Held while a request is written and while a reconnect re-sends: keeps inputs in order.
        self._write_lock = asyncio.Lock()

    async def send(
        self,
        input: Optional[InputLike] = None,
        *,
        metadata: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> AsyncTurn:
        """Sends one input and returns its :class:`AsyncTurn` (``request_id`` as in
        ``Conversation.send``). Raises ``ConversationClosedError`` once the conversation
        ended."""
        self._ensure_accepting_input()
        turn = AsyncTurn(self)
        turn._input = build_input(input, metadata=metadata, request_id=request_id)
        async with self._write_lock:
            self._pending.append(turn)
            await self._write(turn._input)
        return turn

    async def steer(self, input: InputLike, *, request_id: Optional[str] = None) -> SteerResult:
        """Steers the running turn; same guarantees as the synchronous
        :meth:`~agentd_client.Conversation.steer` (the queued turn is an :class:`AsyncTurn`)."""
        self._ensure_accepting_input()
        wire, plain = steer_inputs(input, request_id)
        turn = AsyncTurn(self)
        turn._input = plain
        turn._steer = True
        async with self._write_lock:
            self._pending.append(turn)
            epoch = self._controls.epoch
            await self._write(wire)
        ack = await self._await_ack(wire.request_id, epoch)
        return SteerResult(ack, turn if ack.result == agent_pb2.INPUT_ACK_RESULT_QUEUED else None)

    async def _cancel(self, turn: AsyncTurn) -> agent_pb2.InputAck:
        if turn.done:
            return agent_pb2.InputAck(result=agent_pb2.INPUT_ACK_RESULT_NOTHING_TO_CANCEL)
        self._check_cancellable(turn)
        input = cancel_input()
        async with self._write_lock:
            epoch = self._controls.epoch
            await self._write(input)
        return await self._await_ack(input.request_id, epoch)

    async def _await_ack(self, request_id: str, epoch: int) -> agent_pb2.InputAck:
        """Reads the stream until the ack of ``request_id`` arrives."""
        while True:
            ack = self._take_ack(request_id, epoch)
            if ack is not None:
                return ack
            await self._read_next()

    async def detach(
        self,
        input: Optional[InputLike] = None,
        *,
        metadata: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> agent_pb2.AgentOutput:
        """Hands the rest of the work to the server; returns the output with finish_reason
        FINISH_REASON_DETACHED and the pending snapshot ID."""
        self._ensure_accepting_input()
        detach_input = build_input(input, metadata=metadata, detach=True, request_id=request_id)
        async with self._write_lock:
            self._detach_input = detach_input
            await self._write(detach_input)
        return await self.output()

    async def output(self) -> agent_pb2.AgentOutput:
        """Half-closes, reads every remaining turn and returns the final ``AgentOutput``.
        Idempotent; in-band failures are returned (``finish_reason`` FAILED), not raised."""
        output = self._settled_output()
        if output is not None:
            return output
        if not self._input_closed:
            async with self._write_lock:
                self._input_closed = True
                await self._half_close()
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

    def _open(self) -> grpc.aio.StreamStreamCall:
        """Starts a Chat call (its init goes out with the first write)."""
        metadata = self._metadata() if callable(self._metadata) else self._metadata
        return self._stub.Chat(metadata=metadata, timeout=self._deadline.remaining())

    async def _half_close(self) -> None:
        if self._init is not None:
            await self._write(None)
        try:
            await self._call.done_writing()
        except grpc.RpcError:
            pass  # the read below reports the call's status

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
                await self._recover(error_from_rpc(err), err)
                return
            if response is grpc.aio.EOF:
                await self._recover(self._broken_stream_error(), None)
                return
            self._route(response)
            if self._output is not None:
                await self._drain_after_output()

    async def _recover(self, error: AgentdError, cause: Optional[BaseException]) -> None:
        """Reopens the conversation after a retryable ``error`` (the read lock held), or fails
        it with ``error``."""
        delay = self._retry_delay(error)
        if delay is None:
            raise self._fail(error) from cause
        await asyncio.sleep(delay)
        init = self._reconnect_init()
        assert init is not None  # _retry_delay checked it
        async with self._write_lock:
            if self.finished:  # closed by the caller during the backoff
                raise self._fail(error) from cause
            self._call.cancel()
            self._begin_reconnect()
            try:
                self._call = self._open()
            except AgentdError as failed:  # e.g. the token function returned no token
                raise self._fail(failed) from None
            self._init = init
            for replayed in self._replay():
                await self._write(replayed)
            if self._input_closed:
                await self._half_close()

    async def _drain_after_output(self) -> None:
        try:
            while await self._call.read() is not grpc.aio.EOF:
                pass
        except grpc.RpcError:
            pass  # the output is settled; a late trailer error changes nothing
