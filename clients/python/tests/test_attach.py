"""attach follows the stream of detached work; attaching again after last_sequence gets the rest."""

import asyncio
from typing import List

import grpc
import pytest

from agentd.v1 import agent_pb2, state_pb2
from agentd_client import AgentClient, AttachedRun, CancelledError, NotFoundError
from agentd_client.aio import AsyncAgentClient

WORDS = "one two three four five six seven eight"
UNKNOWN_SNAPSHOT = "0190bbbb-0000-7000-8000-000000000000"


def chunk_text(chunk: agent_pb2.AgentStreamChunk) -> str:
    return "".join(p.text for p in chunk.model_chunk.content if p.WhichOneof("kind") == "text")


def detach_slow_run(client: AgentClient) -> str:
    """Runs one slow turn detached from the start (its whole stream is recorded, from sequence
    1) and returns the pending snapshot ID."""
    output = client.run("assistant", WORDS, detach=True, metadata={"echoDelayMs": 40})
    assert output.finish_reason == state_pb2.FINISH_REASON_DETACHED and output.snapshot_id
    return output.snapshot_id


def test_attach_again_after_the_last_sequence_gets_the_rest_once_then_the_output(client: AgentClient):
    pending = detach_slow_run(client)
    chunks: List[agent_pb2.AgentStreamChunk] = []
    with client.attach("assistant", pending, timeout=30) as first:
        assert isinstance(first, AttachedRun) and first.last_sequence == 0
        for chunk in first:
            chunks.append(chunk)
            if len(chunks) == 3:
                break
    # leaving the block closed the call: the connection dropped
    with pytest.raises(CancelledError) as info:
        first.output()
    assert info.value.code == grpc.StatusCode.CANCELLED
    last = first.last_sequence
    assert [c.sequence for c in chunks] == [1, 2, 3] and last == 3

    rest = client.attach("assistant", pending, after_sequence=last, timeout=30)
    resumed = list(rest)
    output = rest.output()
    assert resumed[0].sequence == last + 1
    sequences = [c.sequence for c in chunks + resumed]
    assert sequences == list(range(1, len(sequences) + 1))  # consecutive: nothing lost, nothing twice
    assert "".join(chunk_text(c) for c in chunks + resumed) == f"echo: {WORDS}"
    assert first.text + rest.text == f"echo: {WORDS}"
    assert resumed[-1].turn_end.finish_reason == state_pb2.FINISH_REASON_STOP
    assert output.finish_reason == state_pb2.FINISH_REASON_STOP and output.snapshot_id == pending
    assert rest.last_sequence == sequences[-1] and rest.done
    assert rest.output() is output  # idempotent

    # Once the work ended, attaching from 0 replays every recorded chunk; output() alone reads
    # (and counts) them.
    replay = client.attach("assistant", pending, timeout=30)
    assert replay.output().finish_reason == state_pb2.FINISH_REASON_STOP
    assert (replay.last_sequence, replay.text) == (sequences[-1], f"echo: {WORDS}")


def test_attach_to_an_unknown_snapshot_raises_not_found(client: AgentClient):
    run = client.attach("assistant", UNKNOWN_SNAPSHOT, timeout=30)
    with pytest.raises(NotFoundError) as info:
        list(run)
    assert info.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(NotFoundError):
        run.output()
    assert run.last_sequence == 0 and run.done


def test_attach_with_a_negative_after_sequence_raises_value_error(client: AgentClient):
    with pytest.raises(ValueError):
        client.attach("assistant", UNKNOWN_SNAPSHOT, after_sequence=-1)


def test_async_attach_again_after_the_last_sequence_gets_the_rest(agentd_address: str, client: AgentClient):
    pending = detach_slow_run(client)

    async def scenario():
        async with AsyncAgentClient(agentd_address) as aclient:
            seen = []
            async with aclient.attach("assistant", pending, timeout=30) as first:
                async for chunk in first:
                    seen.append(chunk)
                    if len(seen) == 2:
                        break
            with pytest.raises(CancelledError):
                await first.output()
            rest = aclient.attach("assistant", pending, after_sequence=first.last_sequence, timeout=30)
            seen.extend([chunk async for chunk in rest])
            return first.last_sequence, seen, await rest.output(), rest.last_sequence

    last, seen, output, rest_last = asyncio.run(scenario())
    sequences = [c.sequence for c in seen]
    assert last == 2 and sequences == list(range(1, len(sequences) + 1))
    assert "".join(chunk_text(c) for c in seen) == f"echo: {WORDS}"
    assert output.finish_reason == state_pb2.FINISH_REASON_STOP and output.snapshot_id == pending
    assert rest_last == sequences[-1]


def test_async_attach_to_an_unknown_snapshot_raises_not_found(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as aclient:
            await aclient.attach("assistant", UNKNOWN_SNAPSHOT, timeout=30).output()

    with pytest.raises(NotFoundError) as info:
        asyncio.run(scenario())
    assert info.value.code == grpc.StatusCode.NOT_FOUND
