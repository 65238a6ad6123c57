"""The call table shared by the sync and asyncio clients: requests, response shapes, checks."""

import asyncio

import grpc
import pytest

from agentd.v1 import agent_pb2, agent_service_pb2, content_pb2, state_pb2
from agentd_client import AgentClient, TurnFailedError
from agentd_client import service_calls as calls
from agentd_client.aio import AsyncAgentClient


def test_run_call_builds_the_run_request_and_returns_the_output():
    call = calls.run_call(
        "assistant", "hi", session_id="s", snapshot_id=None, state=None, detach=True, metadata=None
    )
    assert call.method == "Run"
    assert call.request.init.agent == "assistant" and call.request.init.session_id == "s"
    assert call.request.input.detach and call.request.input.message.content[0].text == "hi"
    output = agent_pb2.AgentOutput(snapshot_id="snap")
    assert call.shape(agent_service_pb2.RunResponse(output=output)) == output


def test_run_call_carries_the_busy_policy():
    call = calls.run_call(
        "assistant",
        "hi",
        session_id="s",
        snapshot_id=None,
        state=None,
        detach=False,
        metadata=None,
        busy_policy="enqueue",
    )
    assert call.request.init.busy_policy == agent_pb2.BUSY_POLICY_ENQUEUE


def test_get_snapshot_call_needs_a_snapshot_id_or_a_session_id():
    with pytest.raises(ValueError):
        calls.get_snapshot_call("assistant", None, None)


def test_list_agents_call_returns_a_list_of_agent_infos():
    response = agent_service_pb2.ListAgentsResponse(agents=[agent_pb2.AgentInfo(name="a")])
    assert [a.name for a in calls.list_agents_call().shape(response)] == ["a"]


def test_reply_text_returns_the_message_text_of_a_good_output():
    output = agent_pb2.AgentOutput(
        message=content_pb2.Message(content=[content_pb2.Part(text="echo: "), content_pb2.Part(text="hi")])
    )
    assert calls.reply_text(output) == "echo: hi"


def test_reply_text_raises_turn_failed_for_an_in_band_failure():
    output = agent_pb2.AgentOutput(
        finish_reason=state_pb2.FINISH_REASON_FAILED,
        error=state_pb2.AgentError(status="INTERNAL", message="boom"),
    )
    with pytest.raises(TurnFailedError) as info:
        calls.reply_text(output)
    assert info.value.code == grpc.StatusCode.INTERNAL


def test_each_client_needs_a_target_or_a_channel():
    with pytest.raises(ValueError, match="^AgentClient needs a target"):
        AgentClient()

    async def make_async():
        AsyncAgentClient()

    with pytest.raises(ValueError, match="^AsyncAgentClient needs a target"):
        asyncio.run(make_async())


def test_a_given_channel_is_used_and_left_open(agentd_address: str):
    channel = grpc.insecure_channel(agentd_address)
    try:
        with AgentClient(channel=channel) as client:
            assert client.channel is channel
        assert "assistant" in [a.name for a in AgentClient(channel=channel).list_agents(timeout=30)]
    finally:
        channel.close()
