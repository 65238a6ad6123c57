"""CustomState applies streamed RFC 6902 patches (wire form) with jsonpatch."""

import pytest

from agentd.v1 import agent_pb2
from agentd_client import CustomPatchError, CustomState, patch_operations, python_to_value


def op(kind, path, value=None, **extra):
    out = agent_pb2.JsonPatchOperation(op=kind, path=path, **extra)
    if value is not None or kind in ("add", "replace", "test"):
        out.value.CopyFrom(python_to_value(value))
    return out


def test_whole_document_replace_at_empty_path_sets_the_state():
    state = CustomState()
    state.apply([op("replace", "", {"tasks": [], "nextId": 1})])
    assert state.value == {"tasks": [], "nextId": 1}


def test_incremental_patches_apply_in_order_after_the_replace():
    state = CustomState()
    state.apply([op("replace", "", {"tasks": [], "nextId": 1})])
    state.apply(
        [
            op("add", "/tasks/-", {"id": 1, "title": "buy milk", "done": False}),
            op("replace", "/nextId", 2),
        ]
    )
    assert state.value == {"tasks": [{"id": 1, "title": "buy milk", "done": False}], "nextId": 2}


def test_remove_move_and_copy_operations_apply():
    state = CustomState({"a": 1, "b": {"c": 2}})
    state.apply([op("copy", "/d", **{"from": "/a"}), op("move", "/e", **{"from": "/b/c"}), op("remove", "/a")])
    assert state.value == {"b": {}, "d": 1, "e": 2}


def test_a_patch_that_does_not_apply_raises_and_leaves_the_state_unchanged():
    state = CustomState({"tasks": []})
    with pytest.raises(CustomPatchError) as info:
        state.apply([op("add", "/tasks/-", "x"), op("replace", "/missing/deep", 1)])
    assert info.value.code.name == "DATA_LOSS"
    assert state.value == {"tasks": []}


def test_value_is_a_copy_that_callers_may_mutate():
    state = CustomState({"notes": ["a"]})
    state.value["notes"].append("b")
    assert state.value == {"notes": ["a"]}


def test_add_with_a_null_value_stores_none():
    state = CustomState({})
    state.apply([op("add", "/x", None)])
    assert state.value == {"x": None}


def test_patch_operations_keeps_from_only_for_move_and_copy():
    ops = patch_operations([op("move", "/b", **{"from": "/a"}), op("remove", "/c")])
    assert ops == [{"op": "move", "path": "/b", "from": "/a"}, {"op": "remove", "path": "/c"}]
