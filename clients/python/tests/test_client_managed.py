"""Client-managed state round trip on `notes` (no store: the client carries the state)."""

from agentd_client import AgentClient, state_custom


def test_client_managed_state_round_trips_through_a_second_conversation(client: AgentClient):
    first = client.chat("notes")
    first.send("alpha").wait()
    first.output()
    second = client.chat("notes", state=first.state)
    turn = second.send("beta")
    turn.wait()
    output = second.output()
    assert turn.text == "noted: beta"
    assert state_custom(output.state) == {"notes": ["alpha", "beta"]}
    assert second.custom == {"notes": ["alpha", "beta"]}


def test_client_managed_output_keeps_the_full_state(client: AgentClient):
    conversation = client.chat("notes")
    conversation.send("gamma").wait()
    conversation.output()
    texts = ["".join(p.text for p in m.content) for m in conversation.state.messages]
    assert texts == ["gamma", "noted: gamma"]
    assert conversation.state.session_id and conversation.session_id == conversation.state.session_id


def test_client_managed_turns_have_no_snapshot(client: AgentClient):
    with client.chat("notes") as conversation:
        turn = conversation.send("delta")
        turn.wait()
    assert turn.turn_end is not None and turn.snapshot_id is None and conversation.snapshot_id is None


def test_client_managed_run_takes_state_as_a_dict(client: AgentClient):
    output = client.run("notes", "epsilon", state={"sessionId": "py-dict-state", "custom": {"notes": ["x"]}})
    assert state_custom(output.state) == {"notes": ["x", "epsilon"]}
    assert output.session_id == "py-dict-state"
