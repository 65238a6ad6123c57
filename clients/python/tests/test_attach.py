"""attach follows the stream of detached work; attaching again after last_sequence gets the rest;
after a takeover (the server running the work was killed, another one on the same store took
it over) the run's text drops the superseded attempt."""

import asyncio
from pathlib import Path
from typing import Iterator, List

import grpc
import pytest

from agentd.v1 import agent_pb2, content_pb2, state_pb2
from agentd_client import AgentClient, AttachedRun, CancelledError, NotFoundError
from agentd_client.aio import AsyncAgentClient
from conftest import AgentdProcess

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


# --- Takeover: two real servers on one file store; the one running the work is SIGKILLed ---

#: A pending row silent for 1 s is presumed dead; the survivor looks every 250 ms.
LIVENESS = ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "1000"]
LONG = "one two three four five six seven eight nine ten eleven twelve"
#: One word every 150 ms: A is killed mid-turn, long before its ~1.8 s answer is done.
SLOW = {"echoDelayMs": 150}


@pytest.fixture(scope="module")
def takeover_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh ``sqlite:`` store shared by the takeover servers of this module."""
    return f"sqlite:{tmp_path_factory.mktemp('agentd-takeover-store') / 'agentd.db'}"


def takeover_instance(directory: Path, store: str, instance_id: str) -> AgentdProcess:
    return AgentdProcess(directory / "stderr.log", ["--store", store, *LIVENESS, "--instance-id", instance_id])


@pytest.fixture(scope="module")
def survivor_address(tmp_path_factory: pytest.TempPathFactory, takeover_store: str) -> Iterator[str]:
    """``host:port`` of server B on the shared store: it takes over the work of dead instances."""
    server = takeover_instance(tmp_path_factory.mktemp("agentd-takeover-B"), takeover_store, "B")
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def doomed(
    tmp_path_factory: pytest.TempPathFactory, takeover_store: str, survivor_address: str
) -> Iterator[AgentdProcess]:
    """Server A on the shared store (B already runs): the test runs detached work on it, then
    SIGKILLs it."""
    server = takeover_instance(tmp_path_factory.mktemp("agentd-takeover-A"), takeover_store, "A")
    try:
        yield server
    finally:
        server.stop()


def message_text(message: content_pb2.Message) -> str:
    return "".join(p.text for p in message.content if p.WhichOneof("kind") == "text")


def assert_text_after_takeover(
    chunks: List[agent_pb2.AgentStreamChunk], text: str, last_sequence: int, output: agent_pb2.AgentOutput
) -> None:
    """Replayed from 0 on B: every chunk once (the marker included), and the run's text is the
    final answer once, without A's cut attempt."""
    sequences = [c.sequence for c in chunks]
    assert sequences == list(range(1, len(chunks) + 1)) and last_sequence == sequences[-1]
    markers = [i for i, c in enumerate(chunks) if c.HasField("takeover")]
    assert len(markers) == 1, markers
    takeover = chunks[markers[0]].takeover
    superseded = [c for c in chunks[: markers[0]] if c.sequence > takeover.superseded_after and chunk_text(c)]
    assert superseded, "A streamed no model text before the takeover: nothing was superseded"
    assert text == f"echo: {LONG}"
    assert output.finish_reason == state_pb2.FINISH_REASON_STOP
    assert message_text(output.message) == f"echo: {LONG}"


def test_attach_after_a_takeover_drops_the_superseded_text(doomed: AgentdProcess, survivor_address: str):
    with AgentClient(doomed.address, timeout=30) as on_a:
        detached = on_a.run("assistant", LONG, detach=True, metadata=SLOW)
        assert detached.finish_reason == state_pb2.FINISH_REASON_DETACHED
        pending = detached.snapshot_id
        with on_a.attach("assistant", pending, timeout=30) as first:
            model_chunks = 0
            for chunk in first:
                model_chunks += chunk.HasField("model_chunk")
                if model_chunks >= 4:
                    break
            doomed.kill()  # mid-turn: B takes the work over about 1 s later
        assert model_chunks >= 4 and not first.text.endswith("twelve")

    with AgentClient(survivor_address) as on_b:
        run = on_b.attach("assistant", pending, after_sequence=0, timeout=60)  # waits for the takeover
        chunks = list(run)
        output = run.output()
    assert_text_after_takeover(chunks, run.text, run.last_sequence, output)


def test_async_attach_after_a_takeover_drops_the_superseded_text(doomed: AgentdProcess, survivor_address: str):
    async def scenario():
        async with AsyncAgentClient(doomed.address) as on_a:
            detached = await on_a.run("assistant", LONG, detach=True, metadata=SLOW, timeout=30)
            assert detached.finish_reason == state_pb2.FINISH_REASON_DETACHED
            async with on_a.attach("assistant", detached.snapshot_id, timeout=30) as first:
                model_chunks = 0
                async for chunk in first:
                    model_chunks += chunk.HasField("model_chunk")
                    if model_chunks >= 4:
                        break
                doomed.kill()
        async with AsyncAgentClient(survivor_address) as on_b:
            run = on_b.attach("assistant", detached.snapshot_id, after_sequence=0, timeout=60)
            chunks = [chunk async for chunk in run]
            return chunks, run, await run.output()

    chunks, run, output = asyncio.run(scenario())
    assert_text_after_takeover(chunks, run.text, run.last_sequence, output)
