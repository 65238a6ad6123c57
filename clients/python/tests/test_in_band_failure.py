"""Issue 47: a turn that fails in-band while the client's request side is still open is seen
as that failure (20 of 20), never as a transport error or a reconnect that reports success."""

from typing import Iterator

import pytest

from agentd.v1 import state_pb2
from agentd_client import AgentClient
from conftest import AgentdProcess

RUNS = 20
TOO_BIG = "x" * 4000  # past the 1 KiB session cap of the server below


@pytest.fixture(scope="module")
def capped_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of an agentd whose sessions may store at most 1 KiB."""
    server = AgentdProcess(tmp_path_factory.mktemp("agentd-session-cap") / "stderr.log", ["--max-session-bytes", "1024"])
    try:
        yield server.address
    finally:
        server.stop()


def test_a_turn_failing_in_band_with_the_request_side_open_is_seen_as_that_failure(capped_address: str):
    seen = []
    with AgentClient(capped_address, timeout=30) as client:
        for _ in range(RUNS):
            conversation = client.chat("assistant")
            conversation.send("hello").wait()
            failed = conversation.send(TOO_BIG)
            failed.wait()
            # The request side is still open here; output() half-closes it only now.
            output = conversation.output()
            seen.append((failed.finish_reason, output.finish_reason, output.error.status))
    failed_reason = state_pb2.FINISH_REASON_FAILED
    assert seen == [(failed_reason, failed_reason, "RESOURCE_EXHAUSTED")] * RUNS
