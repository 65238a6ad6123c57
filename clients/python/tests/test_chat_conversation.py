"""A two-turn Chat on `assistant` (offline echo model) against a real agentd."""

import pytest

from agentd.v1 import state_pb2
from agentd_client import AgentClient


@pytest.fixture
def two_turns(client: AgentClient):
    """A finished two-turn conversation: (first turn, second turn, first turn's chunks, output)."""
    conversation = client.chat("assistant")
    first = conversation.send("hello there")
    first_chunks = list(first)
    second = conversation.send("how are you")
    second.wait()
    output = conversation.output()
    return first, second, first_chunks, output, conversation


def test_a_turn_streams_several_model_chunks_and_ends_with_turn_end(two_turns):
    _, _, chunks, _, _ = two_turns
    model_chunks = [c for c in chunks if c.HasField("model_chunk")]
    assert len(model_chunks) >= 2
    assert chunks[-1].HasField("turn_end")
    assert sum(c.HasField("turn_end") for c in chunks) == 1


def test_each_turn_text_is_the_echo_of_its_input(two_turns):
    first, second, _, _, _ = two_turns
    assert first.text == "echo: hello there"
    assert second.text == "echo: how are you"


def test_turns_have_indexes_0_and_1(two_turns):
    first, second, _, _, _ = two_turns
    assert (first.turn_index, second.turn_index) == (0, 1)


def test_each_turn_ends_with_its_own_snapshot_and_finish_reason_stop(two_turns):
    first, second, _, _, _ = two_turns
    assert first.snapshot_id and second.snapshot_id and first.snapshot_id != second.snapshot_id
    assert first.finish_reason == second.finish_reason == state_pb2.FINISH_REASON_STOP


def test_output_carries_the_session_the_last_snapshot_and_the_last_reply(two_turns):
    _, second, _, output, conversation = two_turns
    assert output.session_id and output.session_id == conversation.session_id
    assert output.snapshot_id == second.snapshot_id == conversation.snapshot_id
    assert "".join(p.text for p in output.message.content) == "echo: how are you"


def test_session_id_is_known_before_the_output(client: AgentClient):
    with client.chat("assistant") as conversation:
        turn = conversation.send("hi")
        turn.wait()
        session_id = conversation.session_id
    assert session_id and session_id == conversation.output().session_id


def test_reading_the_second_turn_first_buffers_the_first(client: AgentClient):
    conversation = client.chat("assistant")
    first = conversation.send("one")
    second = conversation.send("two")
    second.wait()
    assert first.done and first.text == "echo: one" and second.text == "echo: two"
    assert len([c for c in first if c.HasField("model_chunk")]) >= 2
    conversation.output()


def test_texts_yields_the_streamed_text_pieces(client: AgentClient):
    with client.chat("assistant") as conversation:
        pieces = list(conversation.send("stream me please").texts())
    assert len(pieces) >= 2 and "".join(pieces) == "echo: stream me please"


def test_output_is_idempotent(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("once")
    assert conversation.output() is conversation.output()


def test_run_text_returns_the_reply(client: AgentClient):
    assert client.run_text("assistant", "single turn") == "echo: single turn"
