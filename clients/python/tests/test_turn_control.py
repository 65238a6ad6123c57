"""Cancel and steer a running turn (issue 41) against a real agentd serving the fixture agents
``slow``, ``steerable`` (test/fixtures/turn-control-agents.ts)."""

import asyncio

import pytest

from agentd.v1 import agent_pb2, state_pb2
from agentd_client import AgentClient, FailedPreconditionError
from agentd_client.aio import AsyncAgentClient
from agentd_client.json_values import message_text


def history(client: AgentClient, agent: str, snapshot_id: str):
    snapshot = client.get_snapshot(agent, snapshot_id=snapshot_id)
    return [message_text(m) for m in snapshot.state.messages]


def first_chunk(turn, predicate=lambda chunk: True):
    for chunk in turn:
        if predicate(chunk):
            return chunk
    raise AssertionError("the turn ended before the awaited chunk")


def has_tool_request(chunk) -> bool:
    return any(p.WhichOneof("kind") == "tool_request" for p in chunk.model_chunk.content)


def test_cancel_ends_the_running_turn_and_the_next_turn_runs(client: AgentClient):
    # ABORTED, not the STOP of a turn that streamed its ~2 s to the end: the cancel took, however
    # slowly a loaded machine delivered it.
    conversation = client.chat("slow")
    slow = conversation.send("slow story")
    first_chunk(slow)
    ack = slow.cancel()
    end = slow.wait()
    assert ack.result == agent_pb2.INPUT_ACK_RESULT_CANCELLED and ack.turn_index == 0
    assert end.finish_reason == state_pb2.FINISH_REASON_ABORTED
    nxt = conversation.send("hello")
    nxt.wait()
    assert "reply: hello" in nxt.text
    conversation.output()
    assert history(client, "slow", nxt.snapshot_id) == ["hello", "reply: hello"]


def test_cancel_of_an_ended_turn_is_nothing_to_cancel(client: AgentClient):
    conversation = client.chat("slow")
    turn = conversation.send("quick")
    turn.wait()
    assert turn.cancel().result == agent_pb2.INPUT_ACK_RESULT_NOTHING_TO_CANCEL
    conversation.output()


def test_cancel_of_a_queued_turn_is_failed_precondition(client: AgentClient):
    conversation = client.chat("slow")
    running = conversation.send("slow first")
    queued = conversation.send("second")
    with pytest.raises(FailedPreconditionError):
        queued.cancel()
    running.cancel()
    queued.wait()
    assert "reply: second" in queued.text
    conversation.output()


def test_steer_reaches_the_next_model_call_of_a_tool_loop(client: AgentClient):
    conversation = client.chat("steerable")
    turn = conversation.send('call wait {"ms":800}')
    first_chunk(turn, has_tool_request)
    result = conversation.steer("mention pears")
    assert result.ack.result == agent_pb2.INPUT_ACK_RESULT_STEERED and result.turn is None
    turn.wait()
    assert "scripted: mention pears" in turn.text
    conversation.output()
    assert history(client, "steerable", turn.snapshot_id)[-2:] == ["mention pears", "scripted: mention pears"]


def test_steer_after_the_turn_ended_runs_as_the_next_turn(client: AgentClient):
    conversation = client.chat("steerable")
    conversation.send("first").wait()
    result = conversation.steer("later")
    assert result.ack.result == agent_pb2.INPUT_ACK_RESULT_QUEUED
    end = result.turn.wait()
    assert result.turn.text == "scripted: later" and end.turn_index == 1
    conversation.output()


def test_send_invocation_input_cancels_detached_work(client: AgentClient):
    conversation = client.chat("slow")
    first_chunk(conversation.send("slow job"))
    detached = conversation.detach()
    ack = client.send_invocation_input("slow", detached.snapshot_id, agent_pb2.AgentInput(cancel=True))
    assert ack.result == agent_pb2.INPUT_ACK_RESULT_CANCELLED


def test_async_cancel_and_steer(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address) as client:
            conversation = client.chat("steerable")
            turn = await conversation.send('call wait {"ms":800}')
            async for chunk in turn:
                if has_tool_request(chunk):
                    break
            steered = await conversation.steer("mention pears")
            await turn.wait()
            slow = client.chat("slow")
            long = await slow.send("slow story")
            async for _ in long:
                break
            ack = await long.cancel()
            end = await long.wait()
            await slow.output()
            await conversation.output()
            return steered, turn.text, ack, end

    steered, text, ack, end = asyncio.run(scenario())
    assert steered.ack.result == agent_pb2.INPUT_ACK_RESULT_STEERED and "scripted: mention pears" in text
    assert ack.result == agent_pb2.INPUT_ACK_RESULT_CANCELLED
    assert end.finish_reason == state_pb2.FINISH_REASON_ABORTED
