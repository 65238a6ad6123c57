"""The ``WatchSnapshot`` stream with reopening: a snapshot's statuses until it settles, across
dropped connections."""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Callable, Iterator, Optional

import grpc

from agentd.v1 import agent_service_pb2

from .errors import error_from_rpc
from .retrier import Deadline, Retrier, RetryStreak
from .service_calls import TERMINAL_STATUSES

__all__ = ["OpenWatch", "watch_statuses", "watch_statuses_async"]

#: Opens a ``WatchSnapshot`` call: ``(timeout)`` -> the call.
OpenWatch = Callable[[Optional[float]], Any]

_Update = agent_service_pb2.WatchSnapshotResponse


def watch_statuses(open_call: OpenWatch, retrier: Retrier, timeout: Optional[float]) -> Iterator[_Update]:
    """Yields the updates of ``open_call()``'s stream and ends after a terminal status or when
    the server ends the stream. A stream that fails with a retryable error is reopened with
    ``retrier`` (within ``timeout``); a reopened stream's update equal to the last one yielded
    is skipped (it starts with the current status). A final error is raised as an
    ``AgentdError``. Closing the generator cancels the call."""
    deadline = Deadline(timeout)
    last: Optional[_Update] = None
    streak = RetryStreak()
    while True:
        call = open_call(deadline.remaining())
        try:
            for update in call:
                streak = RetryStreak()
                if update == last:
                    continue  # the reopened watch repeats the status delivered last
                last = update
                yield update
                if update.status in TERMINAL_STATUSES:
                    return
            return
        except grpc.RpcError as err:
            error = error_from_rpc(err)
            delay = retrier.plan("WatchSnapshot", streak, error, deadline)
            if delay is None:
                raise error from err
        finally:
            # OpenTelemetry's client interceptor returns a generator over the call instead of
            # the call: closing it drops the call, which grpcio then cancels.
            if hasattr(call, "cancel"):
                call.cancel()
            else:
                call.close()
        time.sleep(delay)


async def watch_statuses_async(
    open_call: OpenWatch, retrier: Retrier, timeout: Optional[float]
) -> AsyncIterator[_Update]:
    """``watch_statuses`` on a ``grpc.aio`` call (waits with ``asyncio.sleep``)."""
    deadline = Deadline(timeout)
    last: Optional[_Update] = None
    streak = RetryStreak()
    while True:
        call = open_call(deadline.remaining())
        try:
            async for update in call:
                streak = RetryStreak()
                if update == last:
                    continue  # the reopened watch repeats the status delivered last
                last = update
                yield update
                if update.status in TERMINAL_STATUSES:
                    return
            return
        except grpc.RpcError as err:
            error = error_from_rpc(err)
            delay = retrier.plan("WatchSnapshot", streak, error, deadline)
            if delay is None:
                raise error from err
        finally:
            call.cancel()
        await asyncio.sleep(delay)
