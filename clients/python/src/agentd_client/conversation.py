"""A synchronous multi-turn conversation over one bidi ``Chat`` stream."""

from __future__ import annotations

from typing import Any, Dict, Optional

import grpc

from agentd.v1 import agent_pb2, agent_service_pb2, agent_service_pb2_grpc

from .client_base import Metadata
from .conversation_core import ConversationCore
from .errors import error_from_rpc
from .inputs import InputLike, build_input
from .request_queue import RequestQueue
from .turn import Turn

__all__ = ["Conversation"]


class Conversation(ConversationCore):
    """One ``Chat`` call: send inputs, iterate each turn's chunks, read the final output.

    Created by ``AgentClient.chat``; the stream opens at once with the ``init`` request.
    ``send`` never blocks (inputs queue up; the server runs them in order); reading happens
    on the caller's thread while iterating a :class:`Turn` or in ``output()``. RPC errors
    (e.g. NOT_FOUND for an unknown agent) surface on the first read as ``AgentdError``.
    Use as a context manager: a clean exit calls ``output()``, an exception cancels the call.
    Not thread-safe: use one conversation from one thread.
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
        self._requests: RequestQueue[agent_service_pb2.ChatRequest] = RequestQueue()
        self._requests.put(agent_service_pb2.ChatRequest(init=init))
        # grpcio reports every call error on read, never here.
        self._call = stub.Chat(iter(self._requests), metadata=metadata, timeout=timeout)

    def send(self, input: Optional[InputLike] = None, *, metadata: Optional[Dict[str, Any]] = None) -> Turn:
        """Queues one input (a user text, ``Message`` or ``AgentInput``) and returns its
        :class:`Turn`. ``metadata`` goes on the message (e.g. ``{"echoDelayMs": 50}``).
        Raises ``ConversationClosedError`` once the conversation ended."""
        self._ensure_accepting_input()
        turn = Turn(self)
        request = agent_service_pb2.ChatRequest(input=build_input(input, metadata=metadata))
        self._pending.append(turn)
        self._requests.put(request)
        return turn

    def detach(
        self, input: Optional[InputLike] = None, *, metadata: Optional[Dict[str, Any]] = None
    ) -> agent_pb2.AgentOutput:
        """Hands the rest of the work to the server and returns the output at once:
        ``finish_reason`` FINISH_REASON_DETACHED and the pending ``snapshot_id`` to watch,
        read or abort later. With ``input``, that input is the last one and runs in the
        background too. Raises ``FailedPreconditionError`` if the agent's store cannot detach.
        """
        self._ensure_accepting_input()
        request = agent_service_pb2.ChatRequest(
            input=build_input(input, metadata=metadata, detach=True)
        )
        self._requests.put(request)
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

    def _read_next(self) -> None:
        """Reads one response and routes it; raises the conversation's error if it failed."""
        if self._settled_output() is not None:
            return
        try:
            response = next(self._call)
        except StopIteration:
            raise self._stream_broke() from None
        except grpc.RpcError as err:
            raise self._fail(error_from_rpc(err)) from err
        self._route(response)
        if self._output is not None:
            self._drain_after_output()

    def _drain_after_output(self) -> None:
        try:
            for _ in self._call:
                pass
        except grpc.RpcError:
            pass  # the output is settled; a late trailer error changes nothing
