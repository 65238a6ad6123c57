"""google.protobuf.Value / Struct convert to and from plain Python JSON."""

from google.protobuf import struct_pb2

from agentd.v1 import content_pb2, state_pb2
from agentd_client import (
    dict_to_struct,
    message_text,
    python_to_value,
    state_custom,
    struct_to_dict,
    value_to_python,
)


def test_nested_json_round_trips_through_value():
    doc = {"tasks": [{"id": 1, "title": "x", "done": False}], "ratio": 0.5, "none": None}
    assert value_to_python(python_to_value(doc)) == doc


def test_whole_numbers_come_back_as_int():
    assert type(value_to_python(python_to_value(3))) is int
    assert type(value_to_python(python_to_value(2.5))) is float


def test_unset_value_is_none():
    assert value_to_python(struct_pb2.Value()) is None


def test_struct_round_trips_through_dict():
    assert struct_to_dict(dict_to_struct({"a": {"b": [1, "c"]}})) == {"a": {"b": [1, "c"]}}


def test_state_custom_is_none_without_custom_state():
    assert state_custom(state_pb2.SessionState(session_id="s")) is None


def test_state_custom_reads_the_custom_value():
    state = state_pb2.SessionState(custom=python_to_value({"notes": ["a"]}))
    assert state_custom(state) == {"notes": ["a"]}


def test_message_text_concatenates_text_parts_only():
    msg = content_pb2.Message(
        content=[content_pb2.Part(text="echo: "), content_pb2.Part(reasoning="r"), content_pb2.Part(text="hi")]
    )
    assert message_text(msg) == "echo: hi"
