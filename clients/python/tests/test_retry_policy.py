"""RetryPolicy and the retry decisions (no server needed): what is retried, how often, how long
the client waits, and what it reports."""

import logging
import uuid

import grpc
import pytest

from agentd.v1 import agent_pb2
from agentd_client import (
    DEFAULT_RETRY,
    AgentClient,
    NotFoundError,
    RetryPolicy,
    UnavailableError,
    build_input,
    error_for_code,
)
from agentd_client import retrier as retrier_module
from agentd_client.retrier import Deadline, Retrier, RetryStreak
from agentd_client.service_calls import delete_session_call, run_call

RESET = UnavailableError("Stream removed (recvmsg:Connection reset by peer (104))")


def test_the_default_policy_is_30s_of_retries_no_attempt_limit_and_backoff_from_100ms_to_2s():
    assert (
        DEFAULT_RETRY.max_elapsed,
        DEFAULT_RETRY.max_attempts,
        DEFAULT_RETRY.initial_backoff,
        DEFAULT_RETRY.max_backoff,
    ) == (30.0, None, 0.1, 2.0)


def test_backoff_caps_double_from_the_initial_backoff_up_to_the_max():
    policy = RetryPolicy(initial_backoff=0.1, max_backoff=2.0)
    assert [policy.backoff(n, lambda: 1.0) for n in (1, 2, 3, 4, 5, 6, 9)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    )


def test_backoff_is_full_jitter_between_zero_and_the_cap():
    policy = RetryPolicy()
    delays = [policy.backoff(3) for _ in range(500)]
    assert all(0 <= delay <= 0.4 for delay in delays)
    assert min(delays) < 0.05 and max(delays) > 0.35


@pytest.mark.parametrize("kwargs", [{"max_attempts": 0}, {"initial_backoff": -1}, {"max_backoff": -0.5}, {"max_elapsed": -1}])
def test_a_policy_out_of_range_raises_value_error(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_the_client_takes_a_policy_or_none_and_nothing_else():
    assert AgentClient("127.0.0.1:1").retry_policy is DEFAULT_RETRY
    assert AgentClient("127.0.0.1:1", retry=None).retry_policy is None
    with pytest.raises(ValueError):
        AgentClient("127.0.0.1:1", retry=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("code", ["UNAVAILABLE", "CANCELLED", "UNKNOWN", "INTERNAL"])
def test_unavailable_and_broken_transport_codes_are_retried(code):
    error = error_for_code(grpc.StatusCode[code], "connection reset")
    assert Retrier(RetryPolicy()).plan("Run", RetryStreak(), error, Deadline(None)) is not None


@pytest.mark.parametrize(
    "code",
    ["INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "PERMISSION_DENIED", "ABORTED", "DEADLINE_EXCEEDED"],
)
def test_other_codes_are_never_retried(code):
    error = error_for_code(grpc.StatusCode[code], "final")
    assert Retrier(RetryPolicy()).plan("Run", RetryStreak(), error, Deadline(None)) is None


def test_retries_stop_after_max_attempts():
    retrier = Retrier(RetryPolicy(max_attempts=3))
    streak = RetryStreak()
    assert [retrier.plan("Run", streak, RESET, Deadline(None)) is not None for _ in (1, 2, 3)] == [True, True, False]
    assert retrier.stats.retries == 2


def test_no_retry_when_the_backoff_would_end_past_the_deadline():
    retrier = Retrier(RetryPolicy(initial_backoff=1.0), rand=lambda: 0.5)
    assert retrier.plan("Run", RetryStreak(), RESET, Deadline(0.4)) is None
    assert retrier.plan("Run", RetryStreak(), RESET, Deadline(0.6)) == pytest.approx(0.5)


class _Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_retries_are_bounded_by_time_since_the_first_failure_not_by_a_count(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(retrier_module.time, "monotonic", clock)
    events = []
    retrier = Retrier(RetryPolicy(on_retry=events.append), rand=lambda: 1.0)
    streak = RetryStreak()
    delays = []
    while (delay := retrier.plan("Chat", streak, RESET, Deadline(None))) is not None:
        delays.append(delay)
        clock.now += delay + 0.05  # the backoff, then an attempt that fails after 50 ms
    # far more than 5 attempts; the backoff reaches its 2 s cap and stays there
    assert delays[:7] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])
    assert len(delays) > 10 and max(delays) == pytest.approx(2.0)
    # no retry starts more than 30 s after the first failure, and the window is used
    assert all(e.elapsed <= 30.0 for e in events) and events[-1].elapsed > 27.0
    assert [e.attempt for e in events] == list(range(2, len(events) + 2))


def test_progress_starts_the_time_budget_afresh(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(retrier_module.time, "monotonic", clock)
    retrier = Retrier(RetryPolicy(max_elapsed=1.0), rand=lambda: 0.0)
    streak = RetryStreak()
    assert retrier.plan("Chat", streak, RESET, Deadline(None)) is not None
    clock.now += 5.0  # a long conversation...
    streak.reset()  # ... that made progress
    assert retrier.plan("Chat", streak, RESET, Deadline(None)) is not None
    clock.now += 1.5  # no progress for longer than max_elapsed
    assert retrier.plan("Chat", streak, RESET, Deadline(None)) is None


def test_no_time_limit_with_max_elapsed_none(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(retrier_module.time, "monotonic", clock)
    retrier = Retrier(RetryPolicy(max_elapsed=None), rand=lambda: 0.0)
    streak = RetryStreak()
    assert retrier.plan("Run", streak, RESET, Deadline(None)) is not None
    clock.now += 3600.0
    assert retrier.plan("Run", streak, RESET, Deadline(None)) is not None


def test_no_retry_without_a_policy_or_after_close():
    assert Retrier(None).plan("Run", RetryStreak(), RESET, Deadline(None)) is None
    closed = Retrier(RetryPolicy())
    closed.close()
    assert closed.plan("Run", RetryStreak(), RESET, Deadline(None)) is None


def test_each_retry_is_counted_reported_to_on_retry_and_logged(caplog):
    events = []
    retrier = Retrier(RetryPolicy(on_retry=events.append), rand=lambda: 0.5)
    with caplog.at_level(logging.INFO, logger="agentd_client.retry"):
        delay = retrier.plan("GetSnapshot", RetryStreak(), RESET, Deadline(None))
    assert retrier.stats.retries == 1
    [event] = events
    assert (event.procedure, event.attempt, event.delay, event.code) == (
        "GetSnapshot",
        2,
        delay,
        grpc.StatusCode.UNAVAILABLE,
    )
    assert event.message == RESET.details and event.error is RESET and event.elapsed == pytest.approx(delay)
    assert any("retrying GetSnapshot (attempt 2)" in r.getMessage() for r in caplog.records)


def test_an_on_retry_that_raises_does_not_stop_the_retry():
    def broken(_event):
        raise RuntimeError("hook bug")

    assert Retrier(RetryPolicy(on_retry=broken)).plan("Run", RetryStreak(), RESET, Deadline(None)) is not None


def test_call_returns_the_first_success_after_retryable_failures():
    outcomes = [RESET, RESET, "ok"]
    retrier = Retrier(RetryPolicy(initial_backoff=0.001))

    def attempt(_deadline):
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert retrier.call("Run", attempt, None) == "ok" and retrier.stats.retries == 2


def test_call_raises_a_final_error_at_once():
    calls = []
    retrier = Retrier(RetryPolicy(initial_backoff=0.001))

    def attempt(_deadline):
        calls.append(1)
        raise NotFoundError("no such snapshot")

    with pytest.raises(NotFoundError):
        retrier.call("GetSnapshot", attempt, None)
    assert len(calls) == 1 and retrier.stats.retries == 0


def _is_uuid4(value: str) -> bool:
    return str(uuid.UUID(value)) == value and uuid.UUID(value).version == 4


def test_every_input_gets_a_fresh_uuid4_request_id():
    first, second = build_input("a"), build_input("a")
    assert _is_uuid4(first.request_id) and _is_uuid4(second.request_id)
    assert first.request_id != second.request_id


def test_the_callers_request_id_is_kept():
    assert build_input("a", request_id="mine-1").request_id == "mine-1"
    assert build_input(agent_pb2.AgentInput(request_id="mine-2")).request_id == "mine-2"


def test_run_and_delete_session_requests_carry_a_request_id():
    run = run_call(
        "assistant", "hi", session_id=None, snapshot_id=None, state=None, detach=False, metadata=None
    )
    assert _is_uuid4(run.request.input.request_id)
    assert _is_uuid4(delete_session_call("s1").request.request_id)
    assert delete_session_call("s1", "del-1").request.request_id == "del-1"


@pytest.mark.parametrize(
    "details",
    [
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Custom verification check "
        "failed with error: UNAUTHENTICATED: Hostname Verification Check failed.",
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Ssl handshake failed: "
        "SSL_ERROR_SSL: error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED",
        "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:1: Unwrap failed (TSI_DATA_CORRUPTED)",
    ],
)
def test_a_tls_handshake_a_retry_cannot_fix_is_not_retried(details):
    assert Retrier(RetryPolicy()).plan("Run", RetryStreak(), UnavailableError(details), Deadline(None)) is None


def test_a_closed_socket_is_still_retried():
    closed = UnavailableError("failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:1: Socket closed")
    assert Retrier(RetryPolicy()).plan("Run", RetryStreak(), closed, Deadline(None)) is not None


class _RecordingClient(AgentClient):
    """An AgentClient that records the options its channel is opened with."""

    opened_with: list = []

    def _open_channel(self, target, credentials, options, interceptors):
        type(self).opened_with = list(options)
        return super()._open_channel(target, credentials, options, interceptors)


def test_the_channel_redials_within_a_second_so_a_restarted_agentd_is_reached_at_the_next_retry():
    # grpcio's own reconnect backoff (1 s growing to 120 s) kept a client away from a restarted
    # agentd for seconds after it was back: the client opens its channel with 0.1 s growing to 1 s.
    with _RecordingClient("127.0.0.1:1"):
        pass
    assert ("grpc.initial_reconnect_backoff_ms", 100) in _RecordingClient.opened_with
    assert ("grpc.max_reconnect_backoff_ms", 1000) in _RecordingClient.opened_with


def test_a_caller_set_reconnect_backoff_wins_over_the_default():
    mine = [("grpc.max_reconnect_backoff_ms", 30_000)]
    with _RecordingClient("127.0.0.1:1", options=mine):
        pass
    reconnect = [o for o in _RecordingClient.opened_with if "reconnect" in o[0]]
    assert reconnect == mine
