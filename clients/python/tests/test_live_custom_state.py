"""Live custom state (streamed JSON Patches) matches the stored snapshot."""

from agentd_client import AgentClient, state_custom


def test_live_custom_state_equals_get_snapshot_custom_after_the_turn(client: AgentClient):
    conversation = client.chat("tasks")
    turn = conversation.send("buy milk")
    turn.wait()
    snapshot = client.get_snapshot("tasks", turn.snapshot_id)
    conversation.output()
    assert conversation.custom == state_custom(snapshot.state)


def test_live_custom_state_tracks_every_turn(client: AgentClient):
    with client.chat("tasks") as conversation:
        conversation.send("buy milk").wait()
        conversation.send("walk dog").wait()
        conversation.send("done 1").wait()
        live = conversation.custom
    assert live == {
        "tasks": [
            {"id": 1, "title": "buy milk", "done": True},
            {"id": 2, "title": "walk dog", "done": False},
        ],
        "nextId": 3,
    }


def test_custom_is_updated_when_a_patch_chunk_is_yielded(client: AgentClient):
    with client.chat("tasks") as conversation:
        seen = [conversation.custom for chunk in conversation.send("first") if len(chunk.custom_patch) > 0]
    assert seen and seen[-1] == {"tasks": [{"id": 1, "title": "first", "done": False}], "nextId": 2}


def test_resumed_conversation_starts_its_live_state_from_the_first_patch(client: AgentClient):
    first = client.chat("tasks")
    first.send("one").wait()
    session_id = first.output().session_id
    with client.chat("tasks", session_id=session_id) as resumed:
        resumed.send("two").wait()
        live = resumed.custom
    latest = client.get_snapshot("tasks", session_id=session_id)
    assert live == state_custom(latest.state) and [t["title"] for t in live["tasks"]] == ["one", "two"]


def test_turn_collects_the_streamed_artifact(client: AgentClient):
    with client.chat("tasks") as conversation:
        turn = conversation.send("write docs")
        turn.wait()
    assert [a.name for a in turn.artifacts] == ["tasks.md"]


def test_live_custom_state_is_the_transformed_client_view(client: AgentClient):
    with client.chat("redacted") as conversation:
        conversation.send("shown").wait()
        live = conversation.custom
    assert live == {"visible": "shown"}
