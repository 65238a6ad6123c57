"""Results carry the protocol's enum names (issue 50): ``print`` shows ``SNAPSHOT_STATUS_ABORTED``,
not ``4``, and ``abort`` returns the status itself, as the TypeScript and Go clients do."""

import asyncio

import pytest

from agentd.v1 import agent_pb2, state_pb2
from agentd_client import AgentClient, FinishReason, InputAckResult, SnapshotStatus
from agentd_client.aio import AsyncAgentClient

VERY_SLOW = {"echoDelayMs": 2000}


@pytest.mark.parametrize(
    "python_enum, proto_enum",
    [
        (FinishReason, state_pb2.FinishReason),
        (SnapshotStatus, state_pb2.SnapshotStatus),
        (InputAckResult, agent_pb2.InputAckResult),
    ],
)
def test_each_enum_has_the_proto_names_and_values(python_enum, proto_enum):
    assert {m.name: m.value for m in python_enum} == dict(proto_enum.items())


def test_str_format_and_print_show_the_name_and_ints_still_compare(capsys):
    status = SnapshotStatus(state_pb2.SNAPSHOT_STATUS_ABORTED)
    print(status)
    assert capsys.readouterr().out == "SNAPSHOT_STATUS_ABORTED\n"
    assert str(status) == f"{status}" == "SNAPSHOT_STATUS_ABORTED"
    assert f"{status:>25}" == "  SNAPSHOT_STATUS_ABORTED"
    assert status == state_pb2.SNAPSHOT_STATUS_ABORTED == 4 and isinstance(status, int)


def test_a_value_of_a_newer_proto_is_named_by_its_number_instead_of_raising():
    unknown = FinishReason(42)
    assert unknown == 42 and str(unknown) == "FinishReason_42"
    with pytest.raises(ValueError):
        FinishReason("FINISH_REASON_STOP")


def test_abort_returns_the_snapshot_status_by_name(client: AgentClient, capsys):
    conversation = client.chat("assistant")
    conversation.send("never finishes", metadata=VERY_SLOW)
    snapshot_id = conversation.detach().snapshot_id
    status = client.abort("assistant", snapshot_id)
    assert type(status) is SnapshotStatus and status is SnapshotStatus.SNAPSHOT_STATUS_ABORTED
    print(status, client.wait_snapshot("assistant", snapshot_id, timeout=30))
    assert capsys.readouterr().out == "SNAPSHOT_STATUS_ABORTED SNAPSHOT_STATUS_ABORTED\n"
    # Code written against the old AbortResponse keeps working, with a warning.
    with pytest.warns(DeprecationWarning, match="drop the .status"):
        assert status.status == state_pb2.SNAPSHOT_STATUS_ABORTED


def test_abort_of_a_completed_snapshot_returns_completed_by_name(client: AgentClient):
    conversation = client.chat("assistant")
    turn = conversation.send("done already")
    turn.wait()
    conversation.output()
    assert str(client.abort("assistant", turn.snapshot_id)) == "SNAPSHOT_STATUS_COMPLETED"


def test_a_turns_finish_reason_and_a_steers_result_are_named(client: AgentClient):
    conversation = client.chat("steerable")
    first = conversation.send("first")
    first.wait()
    assert type(first.finish_reason) is FinishReason and str(first.finish_reason) == "FINISH_REASON_STOP"
    steered = conversation.steer("later")
    assert str(steered.result) == "INPUT_ACK_RESULT_QUEUED"
    assert steered.result == steered.ack.result == agent_pb2.INPUT_ACK_RESULT_QUEUED
    steered.turn.wait()
    conversation.output()


def test_the_async_client_returns_the_same_names(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address, timeout=30) as client:
            conversation = client.chat("assistant")
            turn = await conversation.send("done already")
            await turn.wait()
            await conversation.output()
            return (
                turn.finish_reason,
                await client.abort("assistant", turn.snapshot_id),
                await client.wait_snapshot("assistant", turn.snapshot_id, timeout=30),
            )

    reason, aborted, waited = asyncio.run(scenario())
    assert (str(reason), str(aborted), str(waited)) == (
        "FINISH_REASON_STOP",
        "SNAPSHOT_STATUS_COMPLETED",
        "SNAPSHOT_STATUS_COMPLETED",
    )
