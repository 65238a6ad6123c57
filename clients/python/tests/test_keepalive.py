"""HTTP/2 keepalive: a call whose server vanished without closing the connection (a crashed host,
a dropped network path: no FIN, no RST) fails with UNAVAILABLE instead of waiting forever. A
real agentd behind a proxy that freezes the connection (forwards nothing more, both ways, and
keeps the client's socket open), with the synchronous and the asyncio client."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Iterator, List, Tuple

import pytest

from agentd_client import AgentClient, UnavailableError, message_text
from agentd_client.aio import AsyncAgentClient
from conftest import AgentdProcess
from fault_proxy import FaultProxy

AGENT = "assistant"
#: A reply that takes ten minutes to start: the Chat stays open and nothing flows.
NEVER = {"echoDelayMs": 600_000}
#: The tests' keepalive: a PING every second, given up on after two seconds unanswered. grpc
#: core sends a client's PINGs at least 1 s apart (a time of 200 ms pings every second too); the
#: timeout leaves a busy machine's agentd time to answer (1 s works, with less room).
FAST_KEEPALIVE = [("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_timeout_ms", 2000)]
#: PINGs in a row with no other frame from the client: more than grpc core's default limit of
#: 2 (``grpc.http2.max_pings_without_data``), after which it pings a quiet stream once a minute.
QUIET_PINGS = 3
#: How grpcio 1.85 words the failure ("Stream removed (ping timeout)"); a grpc core that enforces
#: grpc.keepalive_timeout_ms itself says "keepalive timeout".
PING_TIMEOUT = r"ping timeout|keepalive"
#: Only the bound of a failing test: each wait ends at its event, seconds sooner.
BOUND_S = 30.0


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND_S} s: {what}")
        time.sleep(0.05)


async def _wait_for_async(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND_S} s: {what}")
        await asyncio.sleep(0.05)


@pytest.fixture(scope="module")
def pinging_agentd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of an agentd that PINGs its streams every second and drops a connection
    whose PING is unanswered for 2 s (``--keepalive-interval-ms`` / ``--keepalive-timeout-ms``):
    it frees a session held by a vanished client's Chat within seconds."""
    server = AgentdProcess(
        tmp_path_factory.mktemp("agentd-keepalive") / "stderr.log",
        ["--keepalive-interval-ms", "1000", "--keepalive-timeout-ms", "2000"],
    )
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def proxy(agentd_address: str) -> Iterator[FaultProxy]:
    """A proxy to the test agentd; it freezes connections only when told to."""
    with FaultProxy(agentd_address) as faults:
        yield faults


def _quiet_pings(proxy: FaultProxy) -> Callable[[], bool]:
    return lambda: proxy.client_pings_in_a_row() >= QUIET_PINGS


# --- The defaults -----------------------------------------------------------------------------


class _RecordsChannelOptions:
    """Mixed into a client class: records the options its channel is opened with."""

    opened_with: List[Tuple[str, Any]] = []

    def _open_channel(self, target, credentials, options, interceptors):
        type(self).opened_with = list(options)
        return super()._open_channel(target, credentials, options, interceptors)


class _RecordingClient(_RecordsChannelOptions, AgentClient):
    """An AgentClient that records the options its channel is opened with."""


class _RecordingAsyncClient(_RecordsChannelOptions, AsyncAgentClient):
    """An AsyncAgentClient that records the options its channel is opened with."""


# The documented defaults (docs/client-python.md, the Go and TypeScript clients, agentd's
# own --keepalive-interval-ms / --keepalive-timeout-ms).
DOCUMENTED_DEFAULTS = {
    "grpc.keepalive_time_ms": 30_000,
    "grpc.keepalive_timeout_ms": 20_000,
    "grpc.http2.ping_timeout_ms": 20_000,
    "grpc.http2.max_pings_without_data": 0,
}


def _keepalive(options: List[Tuple[str, Any]]) -> dict:
    return {name: value for name, value in options if "keepalive" in name or "ping" in name}


def test_the_channel_pings_every_30_s_and_drops_a_connection_whose_ping_is_unanswered_for_20_s():
    # Also while a stream is quiet.
    with _RecordingClient("127.0.0.1:1"):
        pass
    assert _keepalive(_RecordingClient.opened_with) == DOCUMENTED_DEFAULTS


def test_the_asyncio_client_opens_its_channel_with_the_same_keepalive():
    async def scenario():
        async with _RecordingAsyncClient("127.0.0.1:1"):
            pass

    asyncio.run(scenario())
    assert _keepalive(_RecordingAsyncClient.opened_with) == DOCUMENTED_DEFAULTS


def test_a_caller_set_keepalive_option_wins_and_the_other_defaults_stay():
    with _RecordingClient("127.0.0.1:1", options=[("grpc.keepalive_time_ms", 10_000)]):
        pass
    assert _keepalive(_RecordingClient.opened_with) == {
        **DOCUMENTED_DEFAULTS,
        "grpc.keepalive_time_ms": 10_000,
    }
    mine = [("grpc.keepalive_time_ms", 60_000), ("grpc.http2.max_pings_without_data", 2)]
    with _RecordingClient("127.0.0.1:1", options=mine):
        pass
    assert _keepalive(_RecordingClient.opened_with) == {
        **DOCUMENTED_DEFAULTS,
        "grpc.keepalive_time_ms": 60_000,
        "grpc.http2.max_pings_without_data": 2,
    }


def test_a_caller_set_keepalive_timeout_is_also_grpc_cores_ping_timeout():
    # grpcio 1.85 waits grpc.http2.ping_timeout_ms for a keepalive PING, not
    # grpc.keepalive_timeout_ms: the caller's timeout is carried over, unless they set both.
    with _RecordingClient("127.0.0.1:1", options=[("grpc.keepalive_timeout_ms", 5_000)]):
        pass
    assert _keepalive(_RecordingClient.opened_with) == {
        **DOCUMENTED_DEFAULTS,
        "grpc.keepalive_timeout_ms": 5_000,
        "grpc.http2.ping_timeout_ms": 5_000,
    }
    mine = [("grpc.keepalive_timeout_ms", 5_000), ("grpc.http2.ping_timeout_ms", 7_000)]
    with _RecordingClient("127.0.0.1:1", options=mine):
        pass
    assert _keepalive(_RecordingClient.opened_with)["grpc.http2.ping_timeout_ms"] == 7_000


# --- A server that vanished -------------------------------------------------------------------


def test_a_reply_that_a_vanished_server_never_sends_fails_unavailable(proxy: FaultProxy):
    with AgentClient(proxy.address, options=FAST_KEEPALIVE, retry=None) as client:
        conversation = client.chat(AGENT)
        conversation.send("hello").wait()
        turn = conversation.send("are you there?", metadata=NEVER)
        # The quiet stream goes on being pinged, and agentd answers while it is there.
        _wait_for(_quiet_pings(proxy), f"{QUIET_PINGS} PINGs in a row on the quiet stream")
        proxy.freeze_all()
        # A failing test's bound: a read still waiting then is cancelled (CancelledError).
        bound = threading.Timer(BOUND_S, conversation.close)
        bound.start()
        try:
            with pytest.raises(UnavailableError, match=PING_TIMEOUT):
                turn.wait()
        finally:
            bound.cancel()
        assert turn.turn_end is None


def test_an_async_reply_that_a_vanished_server_never_sends_fails_unavailable(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, options=FAST_KEEPALIVE, retry=None) as client:
            conversation = client.chat(AGENT)
            await (await conversation.send("hello")).wait()
            turn = await conversation.send("are you there?", metadata=NEVER)
            await _wait_for_async(_quiet_pings(proxy), f"{QUIET_PINGS} PINGs in a row on the quiet stream")
            proxy.freeze_all()
            with pytest.raises(UnavailableError, match=PING_TIMEOUT):
                await asyncio.wait_for(turn.wait(), BOUND_S)  # a failing test's bound: TimeoutError
            assert turn.turn_end is None

    asyncio.run(scenario())


def test_with_the_default_retry_a_conversation_carries_on_over_a_new_connection(pinging_agentd: str):
    # The keepalive's UNAVAILABLE is retried like a reset: the Chat reopens (a new connection,
    # which the proxy does not freeze) and re-sends the turn the frozen one swallowed; agentd,
    # pinging too, frees the session its vanished stream held, and the turn runs once.
    with FaultProxy(pinging_agentd) as proxy, AgentClient(proxy.address, options=FAST_KEEPALIVE) as retrying:
        conversation = retrying.chat(AGENT, timeout=BOUND_S)  # a failing test's bound
        conversation.send("hello").wait()
        proxy.freeze_all()
        turn = conversation.send("still there?")
        turn.wait()
        output = conversation.output()
        assert turn.text == "echo: still there?" and retrying.stats.retries >= 1
    with AgentClient(pinging_agentd, timeout=30) as direct:
        stored = direct.get_snapshot(AGENT, session_id=output.session_id)
    assert [message_text(m) for m in stored.state.messages] == [
        "hello", "echo: hello", "still there?", "echo: still there?"
    ]
