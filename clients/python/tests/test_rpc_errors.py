"""Errors arrive as AgentdError subclasses carrying the right grpc.StatusCode."""

import grpc
import pytest

from agentd.v1 import state_pb2
from agentd_client import (
    AgentClient,
    ConversationClosedError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    TurnFailedError,
)


def test_chat_with_an_unknown_agent_raises_not_found(client: AgentClient):
    conversation = client.chat("no-such-agent")
    with pytest.raises(NotFoundError) as info:
        conversation.send("hi").wait()
    assert info.value.code == grpc.StatusCode.NOT_FOUND and "no-such-agent" in info.value.details


def test_run_with_an_unknown_agent_raises_not_found(client: AgentClient):
    with pytest.raises(NotFoundError):
        client.run("no-such-agent", "hi")


def test_state_sent_to_a_server_managed_agent_raises_failed_precondition(client: AgentClient):
    conversation = client.chat("assistant", state={"custom": {}})
    with pytest.raises(FailedPreconditionError) as info:
        conversation.send("hi").wait()
    assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_session_id_sent_to_a_client_managed_agent_raises_failed_precondition(client: AgentClient):
    with pytest.raises(FailedPreconditionError):
        client.run("notes", "hi", session_id="some-session")


def test_state_together_with_an_id_raises_invalid_argument(client: AgentClient):
    with pytest.raises(InvalidArgumentError):
        client.run("notes", "hi", session_id="s", state={"custom": {"notes": []}})


def test_get_snapshot_of_an_unknown_id_raises_not_found(client: AgentClient):
    with pytest.raises(NotFoundError):
        client.get_snapshot("assistant", "no-such-snapshot")


def test_error_is_raised_again_by_output(client: AgentClient):
    conversation = client.chat("no-such-agent")
    with pytest.raises(NotFoundError):
        conversation.output()
    with pytest.raises(NotFoundError):
        conversation.output()


def test_send_after_output_raises_conversation_closed(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.output()
    with pytest.raises(ConversationClosedError):
        conversation.send("late")


def test_in_band_failure_is_an_output_not_an_exception(client: AgentClient):
    output = client.run("flaky", "please fail")
    assert output.finish_reason == state_pb2.FINISH_REASON_FAILED
    assert output.error.status == "INTERNAL"


def test_run_text_raises_turn_failed_with_the_in_band_status(client: AgentClient):
    with pytest.raises(TurnFailedError) as info:
        client.run_text("flaky", "fail now")
    assert info.value.code == grpc.StatusCode.INTERNAL
    assert info.value.output.finish_reason == state_pb2.FINISH_REASON_FAILED
