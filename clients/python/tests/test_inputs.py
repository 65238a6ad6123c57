"""build_init / build_input produce the wire messages the server expects."""

import pytest

from agentd.v1 import agent_pb2, content_pb2, state_pb2
from agentd_client import build_init, build_input, struct_to_dict


def test_text_becomes_a_user_message_with_one_text_part():
    msg = build_input("hello").message
    assert msg.role == content_pb2.ROLE_USER
    assert [p.text for p in msg.content] == ["hello"]


def test_message_without_role_defaults_to_user():
    msg = build_input(content_pb2.Message(content=[content_pb2.Part(text="x")])).message
    assert msg.role == content_pb2.ROLE_USER


def test_metadata_and_detach_are_set_on_the_input():
    built = build_input("slow", metadata={"echoDelayMs": 50}, detach=True)
    assert built.detach is True
    assert struct_to_dict(built.message.metadata) == {"echoDelayMs": 50}


def test_agent_input_is_copied_not_aliased():
    original = agent_pb2.AgentInput(detach=True)
    built = build_input(original)
    built.detach = False
    assert original.detach is True


def test_unsupported_input_type_raises_type_error():
    with pytest.raises(TypeError):
        build_input(42)


def test_init_carries_only_the_given_sources():
    init = build_init("assistant", session_id="s1")
    assert (init.agent, init.session_id, init.snapshot_id, init.HasField("state")) == ("assistant", "s1", "", False)


def test_init_accepts_state_as_proto_json_dict():
    init = build_init("notes", state={"sessionId": "s1", "custom": {"notes": ["a"]}})
    assert init.state.session_id == "s1"
    assert init.state.custom.struct_value.fields["notes"].list_value.values[0].string_value == "a"


def test_init_accepts_state_as_session_state():
    init = build_init("notes", state=state_pb2.SessionState(session_id="s2"))
    assert init.state.session_id == "s2"


def test_init_without_agent_name_raises():
    with pytest.raises(ValueError):
        build_init("")
