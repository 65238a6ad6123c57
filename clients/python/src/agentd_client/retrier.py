"""The retry loop every call of a client goes through: decides whether a failed attempt is
retried, waits the backoff, counts and reports the retry."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from typing import Awaitable, Callable, Optional, TypeVar

from .errors import AgentdError
from .retry_policy import RETRYABLE_CODES, RetryEvent, RetryPolicy, is_tls_refusal

__all__ = ["ClientStats", "Deadline", "Retrier", "RetryStreak"]

T = TypeVar("T")

#: Where the client logs each retry (INFO).
logger = logging.getLogger("agentd_client.retry")


class ClientStats:
    """Counters of one client, safe to read from any thread: ``retries`` is the number of
    retries made so far (every call, stream and conversation reconnect of the client)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retries = 0

    @property
    def retries(self) -> int:
        """Retries made so far by the client (0 while nothing failed)."""
        return self._retries

    def _count_retry(self) -> None:
        with self._lock:
            self._retries += 1

    def __repr__(self) -> str:
        return f"ClientStats(retries={self._retries})"


class Deadline:
    """The deadline of one call across its attempts: ``timeout`` seconds from now, or none."""

    def __init__(self, timeout: Optional[float]) -> None:
        self._at = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> Optional[float]:
        """Seconds left (0 at the earliest), or None without a deadline."""
        return None if self._at is None else max(0.0, self._at - time.monotonic())

    def allows(self, delay: float) -> bool:
        """True when a wait of ``delay`` seconds ends before the deadline."""
        remaining = self.remaining()
        return remaining is None or delay < remaining


class RetryStreak:
    """What one call (stream, conversation) has spent of its retry budget since it last made
    progress: ``failures``, its failed attempts, and ``since``, when the first of them failed
    (``time.monotonic()``; None before any)."""

    def __init__(self) -> None:
        self.failures = 0
        self.since: Optional[float] = None

    def reset(self) -> None:
        """The call made progress: its budget starts afresh."""
        self.failures = 0
        self.since = None

    def fail(self, now: float) -> int:
        """Records a failed attempt at ``now``; returns its number (1 for the first)."""
        if self.failures == 0:
            self.since = now
        self.failures += 1
        return self.failures


class Retrier:
    """A client's retry decisions: ``policy`` (None: never retry), its ``stats``; ``rand``
    draws the jitter (uniform in [0, 1)).

    Guarantees: ``plan`` retries only an error with a code in ``RETRYABLE_CODES`` (or one
    marked ``retryable``), only while the attempt that failed is below ``max_attempts`` (if
    set) and the retry starts at most ``max_elapsed`` after the streak's first failure,
    never for a TLS handshake a retry cannot fix (``is_tls_refusal``),
    never after ``close()``, and only when the backoff ends before the deadline; every retry
    it allows is counted in ``stats.retries``, logged at INFO on ``agentd_client.retry`` and
    reported to ``on_retry`` before the wait.
    """

    def __init__(self, policy: Optional[RetryPolicy], rand: Callable[[], float] = random.random) -> None:
        self.policy = policy
        self._rand = rand
        self.stats = ClientStats()
        self._closed = False

    def close(self) -> None:
        """The client closed its channel: nothing is retried any more."""
        self._closed = True

    def plan(
        self,
        procedure: str,
        streak: RetryStreak,
        error: AgentdError,
        deadline: Deadline,
        *,
        retryable: Optional[bool] = None,
    ) -> Optional[float]:
        """Records the failed attempt in ``streak`` and returns the backoff (seconds) before
        retrying ``procedure`` after it failed with ``error``, or None when ``error`` is final.
        ``retryable`` overrides the decision by code (True for a stream that ended early)."""
        now = time.monotonic()
        failed_attempt = streak.fail(now)
        policy = self.policy
        if policy is None or self._closed:
            return None
        if policy.max_attempts is not None and failed_attempt >= policy.max_attempts:
            return None
        if not (error.code in RETRYABLE_CODES if retryable is None else retryable):
            return None
        if is_tls_refusal(error.details):
            return None
        delay = policy.backoff(failed_attempt, self._rand)
        elapsed = now + delay - (streak.since if streak.since is not None else now)
        if policy.max_elapsed is not None and elapsed > policy.max_elapsed:
            return None
        if not deadline.allows(delay):
            return None
        self.stats._count_retry()
        event = RetryEvent(procedure, failed_attempt + 1, delay, error.code, error.details, error, elapsed)
        logger.info(
            "agentd_client: retrying %s (attempt %d) in %.3fs, %.1fs after the first failure, after %s: %s",
            procedure,
            event.attempt,
            delay,
            elapsed,
            error.code.name,
            error.details,
        )
        if policy.on_retry is not None:
            try:
                policy.on_retry(event)
            except Exception:  # noqa: BLE001 - the caller's hook must not break the call
                logger.exception("agentd_client: on_retry raised; ignored")
        return delay

    def call(self, procedure: str, attempt: Callable[[Deadline], T], timeout: Optional[float]) -> T:
        """Runs ``attempt(deadline)`` until it returns or raises a final ``AgentdError``
        (blocking: waits with ``time.sleep``)."""
        deadline = Deadline(timeout)
        streak = RetryStreak()
        while True:
            try:
                return attempt(deadline)
            except AgentdError as error:
                delay = self.plan(procedure, streak, error, deadline)
                if delay is None:
                    raise
            time.sleep(delay)

    async def call_async(
        self, procedure: str, attempt: Callable[[Deadline], Awaitable[T]], timeout: Optional[float]
    ) -> T:
        """``call`` on asyncio: waits with ``asyncio.sleep``; cancelling the task stops it at
        once (a cancel is never retried)."""
        deadline = Deadline(timeout)
        streak = RetryStreak()
        while True:
            try:
                return await attempt(deadline)
            except AgentdError as error:
                delay = self.plan(procedure, streak, error, deadline)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
