"""The asyncio client (grpc.aio) against the same real agentd."""

import asyncio
import time

import grpc
import pytest

from agentd.v1 import state_pb2
from agentd_client import NotFoundError, state_custom
from agentd_client.aio import AsyncAgentClient


def test_async_two_turn_chat_streams_chunks_and_turn_ends(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            async with client.chat("assistant") as conversation:
                first = await conversation.send("hello")
                chunks = [c async for c in first]
                second = await conversation.send("again")
                await second.wait()
            return first, second, chunks, await conversation.output()

    first, second, chunks, output = asyncio.run(scenario())
    assert sum(c.HasField("model_chunk") for c in chunks) >= 2 and chunks[-1].HasField("turn_end")
    assert (first.text, second.text) == ("echo: hello", "echo: again")
    assert (first.turn_index, second.turn_index) == (0, 1)
    assert output.snapshot_id == second.snapshot_id and output.session_id


def test_async_live_custom_state_equals_get_snapshot_custom(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            conversation = client.chat("tasks")
            turn = await conversation.send("async task")
            await turn.wait()
            snapshot = await client.get_snapshot("tasks", turn.snapshot_id)
            await conversation.output()
            return conversation.custom, state_custom(snapshot.state)

    live, stored = asyncio.run(scenario())
    assert live == stored and live["tasks"][0]["title"] == "async task"


def test_async_unknown_agent_raises_not_found(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            conversation = client.chat("no-such-agent")
            turn = await conversation.send("hi")
            await turn.wait()

    with pytest.raises(NotFoundError) as info:
        asyncio.run(scenario())
    assert info.value.code == grpc.StatusCode.NOT_FOUND


def test_async_send_after_the_server_ended_the_call_reports_the_servers_status(agentd_address: str):
    # grpcio's asyncio write turns a write that races the server's status into INTERNAL
    # (grpc/grpc#36066): here the server rejects the call while the event loop is blocked,
    # so the second send writes to a call that core already saw end.
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            conversation = client.chat("no-such-agent")
            turn = await conversation.send("hi")
            time.sleep(0.3)  # blocks the loop: the NOT_FOUND arrives but is not processed yet
            await conversation.send("again")
            await turn.wait()

    with pytest.raises(NotFoundError) as info:
        asyncio.run(scenario())
    assert info.value.code == grpc.StatusCode.NOT_FOUND


def test_async_detach_then_watch_reaches_completed(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            conversation = client.chat("assistant")
            await conversation.send("async background", metadata={"echoDelayMs": 50})
            output = await conversation.detach()
            statuses = [u.status async for u in client.watch_snapshot("assistant", output.snapshot_id, timeout=30)]
            return output, statuses

    output, statuses = asyncio.run(scenario())
    assert output.finish_reason == state_pb2.FINISH_REASON_DETACHED
    assert statuses[-1] == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_async_list_agents_includes_assistant(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            return [a.name for a in await client.list_agents()]

    assert "assistant" in asyncio.run(scenario())


def test_async_iter_snapshots_pages_through_a_session_newest_first(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            async with client.chat("assistant") as conversation:
                ids = []
                for text in ("one", "two", "three"):
                    turn = await conversation.send(text)
                    await turn.wait()
                    ids.append(turn.snapshot_id)
            listed = [
                s.snapshot_id
                async for s in client.iter_snapshots("assistant", conversation.session_id, page_size=2)
            ]
            return ids, listed

    ids, listed = asyncio.run(scenario())
    assert listed == list(reversed(ids))


def test_async_wait_snapshot_returns_the_settled_status(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            output = await client.run("assistant", "wait for me", detach=True, metadata={"echoDelayMs": 50})
            return await client.wait_snapshot("assistant", output.snapshot_id, timeout=30)

    assert asyncio.run(scenario()) == state_pb2.SNAPSHOT_STATUS_COMPLETED
