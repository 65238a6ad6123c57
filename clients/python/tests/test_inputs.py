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


def test_init_leaves_the_busy_policy_to_the_server_by_default():
    assert build_init("assistant").busy_policy == agent_pb2.BUSY_POLICY_UNSPECIFIED


@pytest.mark.parametrize(
    "given, wire",
    [
        ("reject", agent_pb2.BUSY_POLICY_REJECT),
        ("enqueue", agent_pb2.BUSY_POLICY_ENQUEUE),
        ("interrupt", agent_pb2.BUSY_POLICY_INTERRUPT),
        ("Enqueue", agent_pb2.BUSY_POLICY_ENQUEUE),
        ("BUSY_POLICY_INTERRUPT", agent_pb2.BUSY_POLICY_INTERRUPT),
        (agent_pb2.BUSY_POLICY_REJECT, agent_pb2.BUSY_POLICY_REJECT),
        (agent_pb2.BUSY_POLICY_ENQUEUE, agent_pb2.BUSY_POLICY_ENQUEUE),
        (agent_pb2.BUSY_POLICY_UNSPECIFIED, agent_pb2.BUSY_POLICY_UNSPECIFIED),
        (None, agent_pb2.BUSY_POLICY_UNSPECIFIED),
    ],
)
def test_init_carries_the_busy_policy(given, wire):
    init = build_init("assistant", session_id="s1", busy_policy=given)
    assert (init.busy_policy, init.session_id) == (wire, "s1")


@pytest.mark.parametrize("given", ["wait", "", "unspecified-ish", 7, -1])
def test_an_unknown_busy_policy_raises_a_value_error_naming_the_choices(given):
    with pytest.raises(ValueError) as info:
        build_init("assistant", busy_policy=given)
    assert "busy_policy" in str(info.value) and "'enqueue'" in str(info.value)


@pytest.mark.parametrize("given", [True, 1.0, b"reject"])
def test_a_busy_policy_of_another_type_raises_type_error(given):
    with pytest.raises(TypeError):
        build_init("assistant", busy_policy=given)
