"""Detach hands the work to the server; watch follows it; abort cancels it."""

import grpc
import pytest

from agentd.v1 import state_pb2
from agentd_client import AgentClient, FailedPreconditionError, message_text

SLOW = {"echoDelayMs": 100}
VERY_SLOW = {"echoDelayMs": 2000}


def test_detach_returns_detached_with_a_pending_snapshot(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("background work", metadata=SLOW)
    output = conversation.detach()
    assert output.finish_reason == state_pb2.FINISH_REASON_DETACHED
    assert output.snapshot_id and conversation.snapshot_id == output.snapshot_id
    client.wait_snapshot("assistant", output.snapshot_id, timeout=30)


def test_watch_follows_a_detached_snapshot_to_completed(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("watch me", metadata=SLOW)
    snapshot_id = conversation.detach().snapshot_id
    statuses = [u.status for u in client.watch_snapshot("assistant", snapshot_id, timeout=30)]
    assert statuses[0] == state_pb2.SNAPSHOT_STATUS_PENDING
    assert statuses[-1] == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_completed_detached_snapshot_holds_the_final_state(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("finish in background", metadata=SLOW)
    snapshot_id = conversation.detach().snapshot_id
    client.wait_snapshot("assistant", snapshot_id, timeout=30)
    snapshot = client.get_snapshot("assistant", snapshot_id)
    assert message_text(snapshot.state.messages[-1]) == "echo: finish in background"


def test_abort_flips_a_pending_snapshot_to_aborted(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("never finishes", metadata=VERY_SLOW)
    snapshot_id = conversation.detach().snapshot_id
    assert client.abort("assistant", snapshot_id) == state_pb2.SNAPSHOT_STATUS_ABORTED
    assert client.wait_snapshot("assistant", snapshot_id, timeout=30) == state_pb2.SNAPSHOT_STATUS_ABORTED


def test_abort_of_a_completed_snapshot_returns_completed(client: AgentClient):
    conversation = client.chat("assistant")
    turn = conversation.send("done already")
    turn.wait()
    conversation.output()
    assert client.abort("assistant", turn.snapshot_id) == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_run_with_detach_returns_the_pending_snapshot(client: AgentClient):
    output = client.run("assistant", "single detached turn", detach=True, metadata=SLOW)
    assert output.finish_reason == state_pb2.FINISH_REASON_DETACHED
    assert client.wait_snapshot("assistant", output.snapshot_id, timeout=30) == state_pb2.SNAPSHOT_STATUS_COMPLETED


def test_detach_on_a_store_without_status_subscription_raises_failed_precondition(client: AgentClient):
    conversation = client.chat("no-subscribe")
    conversation.send("cannot go to the background")
    with pytest.raises(FailedPreconditionError) as info:
        conversation.detach()
    assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION
