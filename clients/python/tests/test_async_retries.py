"""Retries of the asyncio client over the wire: a real agentd behind a fault-injecting proxy
that resets the client's connection (RST) at a chosen moment."""

from __future__ import annotations

import asyncio
from typing import Iterator, List

import grpc
import pytest

from agentd.v1 import state_pb2
from agentd_client import AgentClient, CancelledError, RetryEvent, RetryPolicy, UnavailableError, message_text
from agentd_client.aio import AsyncAgentClient
from fault_proxy import FaultProxy

AGENT = "assistant"
SLOW = {"echoDelayMs": 60}  # per streamed chunk: a turn takes a few hundred ms
TEXT = "one two three four five six seven eight"


@pytest.fixture
def proxy(agentd_address: str) -> Iterator[FaultProxy]:
    """A proxy to the test agentd; it resets connections only when told to."""
    with FaultProxy(agentd_address) as faults:
        yield faults


async def _reset_in(proxy: FaultProxy, seconds: float) -> None:
    await asyncio.sleep(seconds)
    proxy.reset_all()


def test_an_async_run_cut_by_a_reset_is_retried_once(proxy: FaultProxy, client: AgentClient):
    events: List[RetryEvent] = []

    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30, retry=RetryPolicy(on_retry=events.append)) as c:
            await c.list_agents()
            reset = asyncio.ensure_future(_reset_in(proxy, 0.15))
            output = await c.run(AGENT, TEXT, metadata=SLOW)
            await reset
            return output, c.stats.retries

    output, retries = asyncio.run(scenario())
    assert proxy.resets == 1 and retries == len(events) == 1
    assert (events[0].procedure, events[0].code) == ("Run", grpc.StatusCode.UNAVAILABLE)
    stored = client.get_snapshot(AGENT, session_id=output.session_id)
    assert [message_text(m) for m in stored.state.messages] == [TEXT, f"echo: {TEXT}"]


def test_an_async_run_with_retry_none_surfaces_the_reset(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30, retry=None) as c:
            await c.list_agents()
            reset = asyncio.ensure_future(_reset_in(proxy, 0.15))
            with pytest.raises(UnavailableError):
                await c.run(AGENT, TEXT, metadata=SLOW)
            await reset
            return c.stats.retries

    assert asyncio.run(scenario()) == 0


def test_cancelling_an_async_run_is_not_retried(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30) as c:
            task = asyncio.ensure_future(c.run(AGENT, TEXT, metadata=SLOW))
            await asyncio.sleep(0.15)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.3)  # a retry would have started by now
            return c.stats.retries

    assert asyncio.run(scenario()) == 0


def test_closing_an_async_conversation_is_not_retried(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30) as c:
            conversation = c.chat(AGENT)
            turn = await conversation.send(TEXT, metadata=SLOW)
            reader = asyncio.ensure_future(turn.wait())
            await asyncio.sleep(0.15)
            conversation.close()
            with pytest.raises(asyncio.CancelledError):  # grpc.aio: a read of a cancelled call
                await reader
            with pytest.raises(CancelledError):
                await conversation.output()
            await asyncio.sleep(0.3)  # a retry would have started by now
            return turn, c.stats.retries

    turn, retries = asyncio.run(scenario())
    assert turn.turn_end is None and retries == 0


def test_an_async_conversation_cut_mid_turn_delivers_each_chunk_and_turn_end_once(
    proxy: FaultProxy, client: AgentClient
):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30) as c:
            conversation = c.chat(AGENT)
            await (await conversation.send("warm up")).wait()
            turn = await conversation.send(TEXT, metadata=SLOW)
            delivered = []
            async for chunk in turn:
                delivered.append(chunk)
                if len(delivered) == 2:
                    proxy.reset_all()
            return turn, delivered, await conversation.output(), c.stats.retries

    turn, delivered, output, retries = asyncio.run(scenario())
    assert retries >= 1
    assert sum(c.HasField("turn_end") for c in delivered) == 1 and delivered[-1].HasField("turn_end")
    streamed = "".join(p.text for c in delivered if c.HasField("model_chunk") for p in c.model_chunk.content)
    assert streamed == turn.text == f"echo: {TEXT}" and turn.turn_index == 1
    stored = client.get_snapshot(AGENT, session_id=output.session_id)
    assert [message_text(m) for m in stored.state.messages] == ["warm up", "echo: warm up", TEXT, f"echo: {TEXT}"]


def test_an_async_attach_cut_by_a_reset_resumes_after_its_last_sequence(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30) as c:
            job = c.chat(AGENT)
            await job.send(TEXT, metadata=SLOW)
            pending = await job.detach()
            run = c.attach(AGENT, pending.snapshot_id)
            sequences = []
            async for chunk in run:
                sequences.append(chunk.sequence)
                if len(sequences) == 2:
                    proxy.reset_all()
            return run, sequences, await run.output(), c.stats.retries

    run, sequences, output, retries = asyncio.run(scenario())
    assert retries >= 1
    assert sequences == list(range(1, len(sequences) + 1))
    assert run.text == f"echo: {TEXT}" and output.finish_reason == state_pb2.FINISH_REASON_STOP


def test_an_async_watch_cut_by_a_reset_reopens_and_sees_the_end(proxy: FaultProxy):
    async def scenario():
        async with AsyncAgentClient(proxy.address, timeout=30) as c:
            job = c.chat(AGENT)
            await job.send(TEXT, metadata=SLOW)
            pending = await job.detach()
            statuses = []
            async for update in c.watch_snapshot(AGENT, pending.snapshot_id):
                statuses.append(update.status)
                if len(statuses) == 1:
                    proxy.reset_all()
            return statuses, c.stats.retries

    statuses, retries = asyncio.run(scenario())
    assert retries >= 1
    assert statuses[0] == state_pb2.SNAPSHOT_STATUS_PENDING and statuses[-1] == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_an_async_conversation_reconnects_while_agentd_still_holds_the_dropped_stream(
    agentd_address: str, client: AgentClient
):
    # As the synchronous case: agentd's side is reset 1 s after the client's, so the old
    # invocation still holds the session when the reconnect re-sends the input in flight.
    async def scenario():
        with FaultProxy(agentd_address, server_reset_delay=1.0) as late:
            async with AsyncAgentClient(late.address, timeout=30) as c:
                conversation = c.chat(AGENT)
                await (await conversation.send("warm up")).wait()
                turn = await conversation.send(TEXT, metadata=SLOW)
                delivered = []
                async for chunk in turn:
                    delivered.append(chunk)
                    if len(delivered) == 1:
                        late.reset_all()
                return turn, delivered, await conversation.output(), c.stats.retries

    turn, delivered, output, retries = asyncio.run(scenario())
    assert retries >= 1 and turn.turn_index == 1
    assert sum(c.HasField("turn_end") for c in delivered) == 1
    assert f"echo: {TEXT}".startswith(turn.text)
    stored = client.get_snapshot(AGENT, session_id=output.session_id)
    assert [message_text(m) for m in stored.state.messages] == ["warm up", "echo: warm up", TEXT, f"echo: {TEXT}"]
