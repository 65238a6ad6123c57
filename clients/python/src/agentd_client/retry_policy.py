"""The retry policy: how often the client retries a call that may not have happened, and how
long it waits in between."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import grpc

from .errors import AgentdError

__all__ = ["RetryEvent", "RetryPolicy", "DEFAULT_RETRY", "RETRYABLE_CODES", "is_tls_refusal"]

#: The status codes a retry may fix: UNAVAILABLE (the server or the network said "try again"),
#: and the codes grpcio gives a call whose connection broke (reset, closed, GOAWAY,
#: RST_STREAM) - unless the caller's own cancel, deadline or ``close()`` caused it, which is
#: never retried. Every other code (INVALID_ARGUMENT, NOT_FOUND, ABORTED, DEADLINE_EXCEEDED,
#: ...) is final.
RETRYABLE_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INTERNAL,
    }
)


#: What grpcio says of a TLS handshake a retry cannot fix: the server's certificate failed
#: verification (or names another host), the peer refused ours (a TLS alert, or grpcio's
#: "Unwrap failed (TSI_DATA_CORRUPTED)" when a TLS 1.3 server drops a client it refused), or the
#: other side does not speak TLS.
_TLS_REFUSAL = re.compile(
    r"verification check failed|CERTIFICATE_VERIFY_FAILED|_ALERT_|WRONG_VERSION_NUMBER|certificate"
    r"|TSI_DATA_CORRUPTED",
    re.IGNORECASE,
)


def is_tls_refusal(details: str) -> bool:
    """True when an UNAVAILABLE's ``details`` describe a TLS handshake that cannot succeed on a
    retry (see ``_TLS_REFUSAL``): such a failure is raised at once, not retried for
    ``max_elapsed``."""
    return bool(_TLS_REFUSAL.search(details or ""))


@dataclass(frozen=True)
class RetryEvent:
    """What ``RetryPolicy.on_retry`` is told before each retry.

    ``procedure`` is the RPC (``"Run"``, ``"Chat"``, ``"GetSnapshot"``, ...); ``attempt`` the
    attempt about to start (2 for the first retry, counted since the call last made
    progress); ``delay`` the backoff before it, in seconds; ``code`` and ``message`` the failed
    attempt's status and details; ``error`` the failed attempt's ``AgentdError``; ``elapsed``
    when the attempt starts, in seconds after the first failure since the call last made
    progress (at most ``max_elapsed``).
    """

    procedure: str
    attempt: int
    delay: float
    code: grpc.StatusCode
    message: str
    error: AgentdError = field(repr=False, compare=False)
    elapsed: float = 0.0


@dataclass(frozen=True)
class RetryPolicy:
    """How the client retries what may not have happened (on by default; ``retry=None`` on the
    client turns it off).

    The budget is bounded by time: ``max_elapsed`` (default 30 s; None: no time limit) is how
    long after its first failure a call may still start a retry, so a call rides out a
    restart of agentd; a stream or conversation that delivered something new since its last
    failure counts afresh. ``max_attempts`` optionally bounds the attempts as well, the first
    included (default None: no limit; 1 never retries). Before retry ``n`` (1 for the first)
    the client waits a uniformly random time in
    ``[0, min(max_backoff, initial_backoff * 2 ** (n - 1))]`` seconds (full jitter; defaults
    0.1 s and 2 s, the cap reached at the sixth retry), never past the call's ``timeout``:
    when the wait would end after it, or the retry would start more than ``max_elapsed``
    after the first failure, the last error is raised instead. ``on_retry(event)`` is called
    before each retry with a :class:`RetryEvent`; an exception it raises is ignored. Raises
    ``ValueError`` for ``max_attempts`` below 1 or a negative ``max_elapsed`` or backoff.
    """

    max_attempts: Optional[int] = None
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    on_retry: Optional[Callable[[RetryEvent], None]] = None
    max_elapsed: Optional[float] = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be 1 or more (or None), got {self.max_attempts}")
        if self.max_elapsed is not None and self.max_elapsed < 0:
            raise ValueError(f"RetryPolicy.max_elapsed must be 0 or more seconds (or None), got {self.max_elapsed}")
        if self.initial_backoff < 0 or self.max_backoff < 0:
            raise ValueError(
                "RetryPolicy backoffs must be 0 or more seconds, got "
                f"initial_backoff={self.initial_backoff}, max_backoff={self.max_backoff}"
            )

    def backoff(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        """The wait in seconds before retry number ``retry`` (1 for the first): full jitter,
        ``rand()`` times ``min(max_backoff, initial_backoff * 2 ** (retry - 1))``."""
        cap = min(self.max_backoff, self.initial_backoff * 2 ** min(30, max(0, retry - 1)))
        return rand() * cap


#: The default policy: retries for up to 30 s after a failure, backoff caps 0.1 s doubling up
#: to 2 s, full jitter.
DEFAULT_RETRY = RetryPolicy()
