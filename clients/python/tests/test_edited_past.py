"""Fork from an edited past (issue 41 item 3): ``state_patch`` / ``messages_patch`` on the
init, against a real agentd serving the fixture agent ``ledger-notes`` (server-managed,
zod state schema ``{notes: string[], count: int >= 0}``)."""

import asyncio
from typing import List

import pytest
from google.protobuf import json_format

from agentd_client import AgentClient
from agentd_client.aio import AsyncAgentClient
from agentd_client.errors import FailedPreconditionError, InvalidArgumentError


def _notes_snapshots(client: AgentClient, *texts: str) -> List[str]:
    conversation = client.chat("ledger-notes")
    ids = []
    for text in texts:
        turn = conversation.send(text)
        turn.wait()
        ids.append(turn.snapshot_id)
    conversation.output()
    return ids


def _custom(client: AgentClient, snapshot_id: str) -> object:
    snapshot = client.get_snapshot("ledger-notes", snapshot_id=snapshot_id)
    return json_format.MessageToDict(snapshot.state)["custom"]


def _texts(client: AgentClient, snapshot_id: str) -> List[str]:
    snapshot = client.get_snapshot("ledger-notes", snapshot_id=snapshot_id)
    return ["".join(p.text for p in m.content) for m in snapshot.state.messages]


def test_run_with_a_state_patch_from_an_earlier_snapshot_commits_a_child_showing_the_edit(
    client: AgentClient,
):
    ids = _notes_snapshots(client, "a", "b")
    output = client.run(
        "ledger-notes",
        "c",
        snapshot_id=ids[0],
        state_patch=[{"op": "replace", "path": "/notes/0", "value": "A (edited)"}],
    )
    snapshot = client.get_snapshot("ledger-notes", snapshot_id=output.snapshot_id)
    assert "".join(p.text for p in output.message.content) == "notes: A (edited),c"
    assert snapshot.parent_id == ids[0]
    assert _custom(client, output.snapshot_id) == {"notes": ["A (edited)", "c"], "count": 2}
    assert snapshot.edit.edited_by == "anonymous"
    assert json_format.MessageToDict(snapshot.edit.state_patch) == [
        {"op": "replace", "path": "/notes/0", "value": "A (edited)"}
    ]


def test_a_state_patch_leaves_the_other_branch_unchanged(client: AgentClient):
    ids = _notes_snapshots(client, "a", "b")
    before = client.get_snapshot("ledger-notes", snapshot_id=ids[1])
    client.run(
        "ledger-notes",
        "z",
        snapshot_id=ids[0],
        state_patch=[{"op": "replace", "path": "/notes", "value": ["rewritten"]}],
    )
    assert client.get_snapshot("ledger-notes", snapshot_id=ids[1]) == before
    assert _custom(client, ids[1]) == {"notes": ["a", "b"], "count": 2}


def test_a_state_patch_that_breaks_the_schema_is_invalid_argument_naming_the_path(
    client: AgentClient,
):
    ids = _notes_snapshots(client, "a")
    with pytest.raises(InvalidArgumentError, match="count"):
        client.run(
            "ledger-notes",
            "b",
            snapshot_id=ids[0],
            state_patch=[{"op": "replace", "path": "/count", "value": "many"}],
        )


def test_a_failing_test_operation_is_invalid_argument_naming_its_index(client: AgentClient):
    ids = _notes_snapshots(client, "a")
    with pytest.raises(InvalidArgumentError, match=r"init\.state_patch\[1\]"):
        client.run(
            "ledger-notes",
            "b",
            snapshot_id=ids[0],
            state_patch=[
                {"op": "add", "path": "/notes/-", "value": "ok"},
                {"op": "test", "path": "/count", "value": 7},
            ],
        )


def test_a_state_patch_on_a_client_managed_agent_is_failed_precondition(client: AgentClient):
    with pytest.raises(FailedPreconditionError, match="client-managed"):
        client.run("notes", "b", state_patch=[{"op": "add", "path": "/notes/-", "value": "x"}])


def test_a_messages_patch_in_a_chat_drops_history_before_the_first_turn(client: AgentClient):
    ids = _notes_snapshots(client, "a", "b")
    conversation = client.chat(
        "ledger-notes",
        snapshot_id=ids[1],
        messages_patch=[{"op": "remove", "path": "/3"}, {"op": "remove", "path": "/2"}],
    )
    turn = conversation.send("c")
    turn.wait()
    conversation.output()
    assert _texts(client, turn.snapshot_id) == ["a", "notes: a", "c", "notes: a,b,c"]
    assert _texts(client, ids[1]) == ["a", "notes: a", "b", "notes: a,b"]


def test_the_asyncio_client_sends_a_state_patch_with_run(client: AgentClient, agentd_address: str):
    ids = _notes_snapshots(client, "a")

    async def scenario():
        async with AsyncAgentClient(agentd_address) as aio:
            return await aio.run(
                "ledger-notes",
                "b",
                snapshot_id=ids[0],
                state_patch=[{"op": "replace", "path": "/notes/0", "value": "async edit"}],
            )

    output = asyncio.run(scenario())
    assert _custom(client, output.snapshot_id) == {"notes": ["async edit", "b"], "count": 2}
