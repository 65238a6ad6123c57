"""A thread-safe, closable queue of requests that grpcio consumes as a request iterator."""

from __future__ import annotations

import queue
import threading
from typing import Generic, Iterator, TypeVar

__all__ = ["RequestQueue"]

T = TypeVar("T")

_CLOSE = object()


class RequestQueue(Generic[T]):
    """Feeds a grpcio client-streaming / bidi call from the caller's thread.

    grpcio pulls requests from an iterator on its own thread; iterating a ``RequestQueue``
    yields every ``put`` request in order and ends (half-closing the request stream) once
    ``close()`` is called. Guarantees: ``put`` never blocks; ``put`` after ``close`` raises
    ``RuntimeError``; ``close`` is idempotent; iteration ends after the requests put before
    ``close``.
    """

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[object]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._closed

    def put(self, request: T) -> None:
        """Queues ``request`` for sending. Raises ``RuntimeError`` after ``close()``."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the request stream is already half-closed")
            self._queue.put(request)

    def close(self) -> None:
        """Half-closes: iteration ends after the already-queued requests."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_CLOSE)

    def __iter__(self) -> Iterator[T]:
        while True:
            item = self._queue.get()
            if item is _CLOSE:
                return
            yield item  # type: ignore[misc]
