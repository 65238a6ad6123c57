"""A turn that fails in-band while the request side is still open (no ``output()`` yet) is
reported as that failure: a FAILED TurnEnd and a FAILED output with RESOURCE_EXHAUSTED, never as
a stop and never retried as a broken connection, even though agentd may reset the stream right
after its trailers (issue 47). 20 runs with the sync and with the asyncio client."""

import asyncio

from agentd.v1 import state_pb2
from agentd_client import AgentClient
from agentd_client.aio import AsyncAgentClient

RUNS = 20
BIG = "x" * 2048  # more than the server's --max-session-bytes 1024


def _assert_failed_output(output, run: int) -> None:
    assert output.finish_reason == state_pb2.FINISH_REASON_FAILED, f"run {run}: {output}"
    assert output.error.status == "RESOURCE_EXHAUSTED", f"run {run}: {output.error}"
    assert "max-session-bytes" in output.error.message


def test_sync_client_reports_the_in_band_failure(session_size_cap_address):
    with AgentClient(session_size_cap_address) as client:
        for run in range(RUNS):
            with client.chat("assistant") as conversation:
                first = conversation.send("fits")
                assert first.wait().finish_reason == state_pb2.FINISH_REASON_STOP
                turn = conversation.send(BIG)
                end = turn.wait()
                assert end is not None and end.finish_reason == state_pb2.FINISH_REASON_FAILED, f"run {run}: {end}"
                _assert_failed_output(conversation.output(), run)
        assert client.stats.retries == 0, "an in-band failure must not be retried as a broken connection"


def test_async_client_reports_the_in_band_failure(session_size_cap_address):
    async def main() -> int:
        async with AsyncAgentClient(session_size_cap_address) as client:
            for run in range(RUNS):
                async with client.chat("assistant") as conversation:
                    first = await conversation.send("fits")
                    assert (await first.wait()).finish_reason == state_pb2.FINISH_REASON_STOP
                    turn = await conversation.send(BIG)
                    end = await turn.wait()
                    assert end is not None and end.finish_reason == state_pb2.FINISH_REASON_FAILED, f"run {run}: {end}"
                    _assert_failed_output(await conversation.output(), run)
            return client.stats.retries

    assert asyncio.run(main()) == 0, "an in-band failure must not be retried as a broken connection"
