"""Conversions between ``google.protobuf.Value`` / ``Struct`` and plain Python JSON values."""

from __future__ import annotations

from typing import Any, Dict, Optional

from google.protobuf import json_format, struct_pb2

from agentd.v1 import content_pb2, state_pb2

__all__ = [
    "value_to_python",
    "python_to_value",
    "struct_to_dict",
    "dict_to_struct",
    "state_custom",
    "message_text",
]

_MAX_SAFE_INTEGER = 2**53


def value_to_python(value: Optional[struct_pb2.Value]) -> Any:
    """Returns ``value`` as plain Python JSON (dict, list, str, int/float, bool or None).

    Guarantees: an unset ``Value`` (or ``None``) is ``None``; numbers that are whole and within
    JavaScript's safe-integer range come back as ``int`` (the wire has doubles only, so
    ``{"nextId": 2}`` round-trips as ``2``, not ``2.0``); other numbers are ``float``.
    """
    if value is None:
        return None
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "number_value":
        n = value.number_value
        if n.is_integer() and abs(n) <= _MAX_SAFE_INTEGER:
            return int(n)
        return n
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    return [value_to_python(v) for v in value.list_value.values]


def struct_to_dict(struct: Optional[struct_pb2.Struct]) -> Dict[str, Any]:
    """Returns ``struct`` as a plain ``dict`` (empty for ``None``), numbers as in
    :func:`value_to_python`."""
    if struct is None:
        return {}
    return {key: value_to_python(v) for key, v in struct.fields.items()}


def python_to_value(obj: Any) -> struct_pb2.Value:
    """Returns plain Python JSON ``obj`` as a ``google.protobuf.Value``.

    Raises ``TypeError`` / ``json_format.ParseError`` for values JSON cannot hold.
    """
    return json_format.ParseDict(obj, struct_pb2.Value())


def dict_to_struct(obj: Dict[str, Any]) -> struct_pb2.Struct:
    """Returns the plain ``dict`` ``obj`` as a ``google.protobuf.Struct``."""
    return json_format.ParseDict(obj, struct_pb2.Struct())


def state_custom(state: Optional[state_pb2.SessionState]) -> Any:
    """Returns the custom state of a ``SessionState`` (e.g. ``snapshot.state`` or
    ``output.state``) as plain Python JSON; ``None`` when there is none."""
    if state is None or not state.HasField("custom"):
        return None
    return value_to_python(state.custom)


def message_text(message: Optional[content_pb2.Message]) -> str:
    """Returns the text of a message: the concatenation of its parts' ``text`` (other part
    kinds contribute nothing); ``""`` for ``None``."""
    if message is None:
        return ""
    return "".join(p.text for p in message.content if p.WhichOneof("kind") == "text")
