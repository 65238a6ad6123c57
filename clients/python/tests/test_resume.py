"""Resuming a server-managed session from a new connection."""

from agentd_client import AgentClient


def test_resume_by_session_in_a_new_connection_continues_the_turn_index(agentd_address: str):
    with AgentClient(agentd_address) as first_client:
        conversation = first_client.chat("assistant")
        conversation.send("first").wait()
        conversation.send("second").wait()
        session_id = conversation.output().session_id
    with AgentClient(agentd_address) as second_client:
        resumed = second_client.chat("assistant", session_id=session_id)
        turn = resumed.send("third")
        turn.wait()
        output = resumed.output()
    assert turn.turn_index == 2 and turn.text == "echo: third"
    assert output.session_id == session_id


def test_resume_by_session_keeps_the_history(client: AgentClient):
    first = client.chat("assistant")
    first.send("remember me").wait()
    session_id = first.output().session_id
    resumed = client.chat("assistant", session_id=session_id)
    resumed.send("again").wait()
    snapshot = client.get_snapshot("assistant", session_id=session_id)
    texts = ["".join(p.text for p in m.content) for m in snapshot.state.messages]
    resumed.output()
    assert texts == ["remember me", "echo: remember me", "again", "echo: again"]


def test_resume_by_snapshot_branches_from_that_turn(client: AgentClient):
    conversation = client.chat("assistant")
    first = conversation.send("a")
    first.wait()
    conversation.send("b").wait()
    conversation.output()
    branch = client.chat("assistant", snapshot_id=first.snapshot_id)
    turn = branch.send("c")
    turn.wait()
    assert turn.turn_index == 1
    assert branch.output().session_id == conversation.session_id


def test_list_snapshots_returns_a_sessions_snapshots_newest_first(client: AgentClient):
    conversation = client.chat("assistant")
    first = conversation.send("x")
    second = conversation.send("y")
    output = conversation.output()
    page = client.list_snapshots("assistant", output.session_id)
    assert [s.snapshot_id for s in page.snapshots] == [second.snapshot_id, first.snapshot_id]
