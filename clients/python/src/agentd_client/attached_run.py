"""The stream of detached work a client attached to (``AttachInvocation``): its chunks in
sequence order, then its output."""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Callable, Iterator, List, Optional, Tuple

import grpc
import grpc.aio

from agentd.v1 import agent_pb2, agent_service_pb2

from .errors import AgentdError, CancelledError, error_for_code, error_from_rpc
from .retrier import Deadline, Retrier, RetryStreak

__all__ = ["AttachedRunRecord", "AttachedRun", "AsyncAttachedRun", "OpenAttach"]

#: Opens an ``AttachInvocation`` call: ``(after_sequence, timeout)`` -> the call.
OpenAttach = Callable[[int, Optional[float]], Any]


class AttachedRunRecord:
    """What has been read of an attached stream so far (shared by the sync and asyncio runs).

    Guarantees: ``last_sequence`` is the ``sequence`` of the last chunk read, or the
    ``after_sequence`` the run started from before any; ``text`` is the concatenated text of
    the model chunks read, without those a takeover superseded (see ``text``); ``done`` is True
    once the output arrived or the run failed. After a failure every later read raises the
    same ``AgentdError``. A broken stream (UNAVAILABLE, a reset connection, an end before the
    output) is reopened with the retry policy from ``last_sequence``, within ``timeout``, so
    every chunk is delivered once.
    """

    def __init__(
        self,
        open_call: OpenAttach,
        agent: str,
        snapshot_id: str,
        after_sequence: int,
        *,
        retrier: Optional[Retrier] = None,
        timeout: Optional[float] = None,
    ) -> None:
        self._open_call = open_call
        self._retrier = retrier if retrier is not None else Retrier(None)
        self._deadline = Deadline(timeout)
        self._streak = RetryStreak()
        #: The agent of the detached work.
        self.agent: str = agent
        #: The pending snapshot ID of the detached work.
        self.snapshot_id: str = snapshot_id
        self._last_sequence = after_sequence
        #: (sequence, text) of each model chunk read, so a takeover can drop the superseded ones.
        self._text: List[Tuple[int, str]] = []
        self._output: Optional[agent_pb2.AgentOutput] = None
        self._error: Optional[AgentdError] = None

    @property
    def last_sequence(self) -> int:
        """The ``sequence`` of the last chunk read (the ``after_sequence`` the run started from
        before any): attach again with ``after_sequence=run.last_sequence`` to receive the rest
        exactly once."""
        return self._last_sequence

    @property
    def text(self) -> str:
        """The text of the model chunks read so far. Takeover-aware: when another server took
        the work over (a chunk with ``takeover`` set), the text of the model chunks read whose
        ``sequence`` is greater than its ``superseded_after`` (the cut attempt, which runs
        again after the marker) is dropped, so the text holds the final text once."""
        return "".join(text for _, text in self._text)

    @property
    def done(self) -> bool:
        """True once the output arrived or the run failed (or was closed)."""
        return self._output is not None or self._error is not None

    def _settled(self) -> bool:
        """True once the output arrived; raises the run's error once it failed."""
        if self._error is not None:
            raise self._error
        return self._output is not None

    def _route(
        self, response: agent_service_pb2.AttachInvocationResponse
    ) -> Optional[agent_pb2.AgentStreamChunk]:
        """Records one response; returns its chunk (None for the output)."""
        self._streak.reset()
        if response.HasField("chunk"):
            chunk = response.chunk
            if chunk.sequence:
                self._last_sequence = chunk.sequence
            if chunk.HasField("takeover"):
                self._supersede(chunk.takeover.superseded_after)
            if chunk.HasField("model_chunk"):
                self._text.extend(
                    (chunk.sequence, part.text)
                    for part in chunk.model_chunk.content
                    if part.WhichOneof("kind") == "text"
                )
            return chunk
        if response.HasField("output"):
            self._output = response.output
        return None

    def _supersede(self, superseded_after: int) -> None:
        """A takeover marker: drops the text of the model chunks read after ``superseded_after``
        (the cut turn's attempt; the takeover runs it again)."""
        self._text = [(sequence, text) for sequence, text in self._text if sequence <= superseded_after]

    def _fail(self, error: AgentdError) -> AgentdError:
        if self._error is None:
            self._error = error
        return self._error

    def _broken_stream_error(self) -> AgentdError:
        return error_for_code(
            grpc.StatusCode.DATA_LOSS,
            f"the AttachInvocation stream of snapshot {self.snapshot_id!r} ended without an output",
        )

    def _retry_delay(self, error: AgentdError, *, broken: bool = False) -> Optional[float]:
        """The backoff before reopening after ``error`` (``broken``: the stream ended without
        an output), or None when the run must fail with it."""
        if self.done:
            return None
        return self._retrier.plan(
            "AttachInvocation", self._streak, error, self._deadline, retryable=True if broken else None
        )

    def _reopen(self) -> Any:
        """A new call from ``last_sequence``."""
        return self._open_call(self._last_sequence, self._deadline.remaining())

    def _closed_by_client(self) -> bool:
        """Fails the run with CANCELLED unless it already ended. Returns True when the caller
        must cancel its call."""
        if self.done:
            return False
        self._fail(
            CancelledError(f"the attached stream of snapshot {self.snapshot_id!r} was closed by the client")
        )
        return True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(snapshot_id={self.snapshot_id!r}, done={self.done}, "
            f"last_sequence={self._last_sequence}, text={self.text!r})"
        )


class AttachedRun(AttachedRunRecord):
    """The stream of detached work, returned by ``AgentClient.attach``.

    Iterating yields the chunks not read yet, in sequence order (model chunks, custom patches,
    artifacts, TurnEnds; each carries its ``sequence``), as they arrive, and ends when the
    output arrives; leaving the loop early leaves the rest to be read later (by ``output()``
    or another loop). When another server took the work over after its server died, the
    stream goes on with a chunk that has ``takeover`` set: it is yielded like any other, the
    chunks before it whose ``sequence`` is greater than its ``superseded_after`` are
    superseded (the cut turn runs again after it), and ``text`` drops their text;
    ``last_sequence`` goes on counting every chunk. ``output()`` reads the rest and returns the
    work's ``AgentOutput`` (in-band failures are returned with ``finish_reason`` FAILED, not
    raised). ``close()`` (or leaving a ``with`` block) stops the stream, not the work. RPC
    failures raise an ``AgentdError`` from iteration / ``output()``. Not thread-safe.
    """

    def __init__(
        self,
        open_call: OpenAttach,
        agent: str,
        snapshot_id: str,
        after_sequence: int,
        *,
        retrier: Optional[Retrier] = None,
        timeout: Optional[float] = None,
    ) -> None:
        super().__init__(open_call, agent, snapshot_id, after_sequence, retrier=retrier, timeout=timeout)
        self._call = self._reopen()

    def __iter__(self) -> Iterator[agent_pb2.AgentStreamChunk]:
        while True:
            chunk = self._read_next()
            if chunk is None:
                return
            yield chunk

    def output(self) -> agent_pb2.AgentOutput:
        """Reads the rest of the stream (chunks not read yet are skipped, but still counted in
        ``last_sequence`` and ``text``) and returns the work's ``AgentOutput``. Idempotent."""
        while self._read_next() is not None:
            pass
        assert self._output is not None
        return self._output

    def _recover(self, error: AgentdError, cause: Optional[BaseException], *, broken: bool = False) -> None:
        """Reopens the stream after a retryable ``error``, or fails the run with it."""
        delay = self._retry_delay(error, broken=broken)
        if delay is None:
            raise self._fail(error) from cause
        time.sleep(delay)
        self._cancel_call()
        self._call = self._reopen()

    def _cancel_call(self) -> None:
        # OpenTelemetry's client interceptor returns a generator over the call instead of
        # the call: closing it drops the call, which grpcio then cancels.
        if hasattr(self._call, "cancel"):
            self._call.cancel()
        else:
            self._call.close()

    def close(self) -> None:
        """Stops the stream unless it already ended; later reads raise ``CancelledError``.
        The detached work goes on (``client.abort`` stops it). Idempotent."""
        if self._closed_by_client():
            self._cancel_call()

    def __enter__(self) -> "AttachedRun":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _read_next(self) -> Optional[agent_pb2.AgentStreamChunk]:
        """Reads one response: returns its chunk, or None once the output arrived."""
        while True:
            if self._settled():
                return None
            try:
                response = next(self._call)
                break
            except StopIteration:
                self._recover(self._broken_stream_error(), None, broken=True)
            except grpc.RpcError as err:
                self._recover(error_from_rpc(err), err)
        chunk = self._route(response)
        if self._output is not None:
            try:
                for _ in self._call:
                    pass
            except grpc.RpcError:
                pass  # the output is settled; a late trailer error changes nothing
        return chunk


class AsyncAttachedRun(AttachedRunRecord):
    """The stream of detached work on asyncio, returned by ``AsyncAgentClient.attach``:
    ``async for chunk in run`` yields the chunks not read yet and ends when the output arrives;
    ``await run.output()`` reads the rest and returns the ``AgentOutput``; ``close()`` (or
    leaving an ``async with`` block) stops the stream. Same guarantees as
    :class:`~agentd_client.AttachedRun`, the takeover-aware ``text`` included."""

    def __init__(
        self,
        open_call: OpenAttach,
        agent: str,
        snapshot_id: str,
        after_sequence: int,
        *,
        retrier: Optional[Retrier] = None,
        timeout: Optional[float] = None,
    ) -> None:
        super().__init__(open_call, agent, snapshot_id, after_sequence, retrier=retrier, timeout=timeout)
        self._call: grpc.aio.UnaryStreamCall = self._reopen()
        self._read_lock = asyncio.Lock()

    async def __aiter__(self) -> AsyncIterator[agent_pb2.AgentStreamChunk]:
        while True:
            chunk = await self._read_next()
            if chunk is None:
                return
            yield chunk

    async def output(self) -> agent_pb2.AgentOutput:
        """Reads the rest of the stream and returns the work's ``AgentOutput``. Idempotent."""
        while await self._read_next() is not None:
            pass
        assert self._output is not None
        return self._output

    async def _recover(self, error: AgentdError, cause: Optional[BaseException], *, broken: bool = False) -> None:
        """Reopens the stream after a retryable ``error``, or fails the run with it."""
        delay = self._retry_delay(error, broken=broken)
        if delay is None:
            raise self._fail(error) from cause
        await asyncio.sleep(delay)
        self._call.cancel()
        self._call = self._reopen()

    def close(self) -> None:
        """Cancels the call unless the run already ended. Idempotent."""
        if self._closed_by_client():
            self._call.cancel()

    async def __aenter__(self) -> "AsyncAttachedRun":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    async def _read_next(self) -> Optional[agent_pb2.AgentStreamChunk]:
        async with self._read_lock:
            while True:
                if self._settled():
                    return None
                try:
                    response = await self._call.read()
                except grpc.RpcError as err:
                    await self._recover(error_from_rpc(err), err)
                    continue
                if response is not grpc.aio.EOF:
                    break
                await self._recover(self._broken_stream_error(), None, broken=True)
            chunk = self._route(response)
            if self._output is not None:
                try:
                    while await self._call.read() is not grpc.aio.EOF:
                        pass
                except grpc.RpcError:
                    pass  # the output is settled; a late trailer error changes nothing
            return chunk
