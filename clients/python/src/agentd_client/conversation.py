"""A synchronous multi-turn conversation over one bidi ``Chat`` stream."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Optional, Union

import grpc

from agentd.v1 import agent_pb2, agent_service_pb2, agent_service_pb2_grpc

from .client_base import Metadata
from .conversation_core import ConversationCore
from .errors import AgentdError, error_from_rpc
from .inputs import InputLike, build_input
from .request_queue import RequestQueue
from .retrier import Retrier
from .turn import Turn
from .turn_control import SteerResult, cancel_input, steer_inputs

__all__ = ["Conversation"]


class Conversation(ConversationCore):
    """One ``Chat`` call: send inputs, iterate each turn's chunks, read the final output.

    Created by ``AgentClient.chat``; the stream opens at once with the ``init`` request.
    ``send`` never blocks (inputs queue up; the server runs them in order); reading happens
    on the caller's thread while iterating a :class:`Turn` or in ``output()``. RPC errors
    (e.g. NOT_FOUND for an unknown agent) surface on the first read as ``AgentdError``.
    Use as a context manager: a clean exit calls ``output()``, an exception cancels the call.
    Not thread-safe: use one conversation from one thread.

    With a retry policy (the client's default), a stream that breaks (UNAVAILABLE, a reset
    connection, an end before the output) is reopened after a backoff, within ``timeout``:
    the new Chat resumes the session by ID once a TurnEnd named it (before that it re-sends
    the original init) and re-sends, in order and with their request IDs, the inputs whose
    TurnEnd has not arrived; chunks already delivered are not delivered again, and each
    TurnEnd arrives once. A client-managed conversation is reopened only before its first
    TurnEnd. ``metadata`` may be a function returning it (called for every stream opened).
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
        self._requests: RequestQueue[agent_service_pb2.ChatRequest] = RequestQueue()
        self._call = self._open(init)

    def send(
        self,
        input: Optional[InputLike] = None,
        *,
        metadata: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> Turn:
        """Queues one input (a user text, ``Message`` or ``AgentInput``) and returns its
        :class:`Turn`. ``metadata`` goes on the message (e.g. ``{"echoDelayMs": 50}``);
        ``request_id`` is the input's idempotency key (default: the ``AgentInput``'s, else a
        new UUID; ``turn.request_id``). Raises ``ConversationClosedError`` once the
        conversation ended."""
        self._ensure_accepting_input()
        turn = Turn(self)
        turn._input = build_input(input, metadata=metadata, request_id=request_id)
        self._pending.append(turn)
        self._requests.put(agent_service_pb2.ChatRequest(input=turn._input))
        return turn

    def steer(self, input: InputLike, *, request_id: Optional[str] = None) -> SteerResult:
        """Steers the running turn with ``input``'s message (a user text, ``Message`` or
        ``AgentInput``): prompt agents add it before their next model call, custom agents read
        it from their turn context; when no turn takes it, it runs as the next turn (never
        dropped). Reads the stream until the server answers and returns a
        :class:`SteerResult`: the ``InputAck`` and, when queued, the :class:`Turn` it runs as.
        Sent once and never re-sent: ``UnavailableError`` if the stream broke first.
        ``InvalidArgumentError`` without a message (or with resume or detach)."""
        self._ensure_accepting_input()
        wire, plain = steer_inputs(input, request_id)
        turn = Turn(self)
        turn._input = plain
        turn._steer = True
        self._pending.append(turn)
        ack = self._send_control(wire)
        return SteerResult(ack, turn if ack.result == agent_pb2.INPUT_ACK_RESULT_QUEUED else None)

    def _cancel(self, turn: Turn) -> agent_pb2.InputAck:
        if turn.done:
            return agent_pb2.InputAck(result=agent_pb2.INPUT_ACK_RESULT_NOTHING_TO_CANCEL)
        self._check_cancellable(turn)
        return self._send_control(cancel_input())

    def _send_control(self, input: agent_pb2.AgentInput) -> agent_pb2.InputAck:
        """Sends a control input and reads the stream until its ack arrives."""
        epoch = self._controls.epoch
        self._requests.put(agent_service_pb2.ChatRequest(input=input))
        while True:
            ack = self._take_ack(input.request_id, epoch)
            if ack is not None:
                return ack
            self._read_next()

    def detach(
        self,
        input: Optional[InputLike] = None,
        *,
        metadata: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> agent_pb2.AgentOutput:
        """Hands the rest of the work to the server and returns the output at once:
        ``finish_reason`` FINISH_REASON_DETACHED and the pending ``snapshot_id`` to watch,
        read or abort later. With ``input``, that input is the last one and runs in the
        background too. Raises ``FailedPreconditionError`` if the agent's store cannot detach.
        """
        self._ensure_accepting_input()
        self._detach_input = build_input(input, metadata=metadata, detach=True, request_id=request_id)
        self._requests.put(agent_service_pb2.ChatRequest(input=self._detach_input))
        return self.output()

    def output(self) -> agent_pb2.AgentOutput:
        """Half-closes the input, reads every remaining turn, and returns the final
        ``AgentOutput``. Idempotent: later calls return the same output (or re-raise the same
        error). An in-band failure is not raised: check ``output.finish_reason`` /
        ``output.error``."""
        output = self._settled_output()
        if output is not None:
            return output
        self._input_closed = True
        self._requests.close()
        while self._output is None:
            self._read_next()
        return self._output

    def close(self) -> None:
        """Ends the conversation now. Before the output arrived this cancels the call, which
        cancels the server's work (unless it was detached). Idempotent."""
        self._requests.close()
        if self._closed_by_client():
            self._call.cancel()

    def __enter__(self) -> "Conversation":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None and not self.finished:
            self.output()
        else:
            self.close()

    def _ended(self) -> None:
        # grpcio's request thread blocks on the queue until it is closed.
        self._requests.close()

    def _open(self, init: agent_pb2.AgentInit) -> Any:
        """Starts a Chat call: ``init`` together with the first input to replay (so the
        server knows at once which input a reconnect retries, and waits for the original
        instead of refusing a busy session), then the other inputs to replay (the half-close
        too once the caller half-closed). grpcio reports every call error on read, never
        here."""
        replay = self._replay()
        first = agent_service_pb2.ChatRequest(init=init)
        if replay:
            first.input.CopyFrom(replay.pop(0))
        self._requests.put(first)
        for replayed in replay:
            self._requests.put(agent_service_pb2.ChatRequest(input=replayed))
        if self._input_closed:
            self._requests.close()
        metadata = self._metadata() if callable(self._metadata) else self._metadata
        return self._stub.Chat(
            iter(self._requests), metadata=metadata, timeout=self._deadline.remaining()
        )

    def _read_next(self) -> None:
        """Reads one response and routes it; raises the conversation's error if it failed."""
        if self._settled_output() is not None:
            return
        try:
            response = next(self._call)
        except StopIteration:
            self._recover(self._broken_stream_error(), None)
            return
        except grpc.RpcError as err:
            self._recover(error_from_rpc(err), err)
            return
        self._route(response)
        if self._output is not None:
            self._drain_after_output()

    def _recover(self, error: AgentdError, cause: Optional[BaseException]) -> None:
        """Reopens the conversation after a retryable ``error``, or fails it with ``error``."""
        delay = self._retry_delay(error)
        if delay is None:
            raise self._fail(error) from cause
        time.sleep(delay)
        init = self._reconnect_init()
        assert init is not None  # _retry_delay checked it
        self._call.cancel()
        self._requests.close()  # lets grpcio's request thread of the broken call end
        self._requests = RequestQueue()
        self._begin_reconnect()
        try:
            self._call = self._open(init)
        except AgentdError as failed:  # e.g. the token function returned no token
            raise self._fail(failed) from None

    def _drain_after_output(self) -> None:
        try:
            for _ in self._call:
                pass
        except grpc.RpcError:
            pass  # the output is settled; a late trailer error changes nothing
