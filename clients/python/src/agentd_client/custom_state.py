"""Live custom state: a JSON document kept current by applying streamed RFC 6902 patches."""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, List

import jsonpatch
import jsonpointer

from agentd.v1 import agent_pb2

from .errors import CustomPatchError
from .json_values import value_to_python

__all__ = ["CustomState", "patch_operations"]

_VALUE_OPS = frozenset({"add", "replace", "test"})
_FROM_OPS = frozenset({"move", "copy"})


def patch_operations(ops: Iterable[agent_pb2.JsonPatchOperation]) -> List[Dict[str, Any]]:
    """Returns wire ``JsonPatchOperation``s as plain RFC 6902 operation dicts (``value`` only
    for add/replace/test, ``from`` only for move/copy), ready for ``jsonpatch``."""
    out: List[Dict[str, Any]] = []
    for op in ops:
        item: Dict[str, Any] = {"op": op.op, "path": op.path}
        if op.op in _VALUE_OPS:
            item["value"] = value_to_python(op.value) if op.HasField("value") else None
        if op.op in _FROM_OPS:
            item["from"] = getattr(op, "from")
        out.append(item)
    return out


class CustomState:
    """The client-side copy of an agent's (client-facing) custom state.

    Guarantees: after ``apply(ops)`` the document equals the previous document with the RFC 6902
    operations applied in order, atomically (a failing patch leaves it unchanged and raises
    ``CustomPatchError``). A whole-document ``replace``/``add`` at path ``""`` - what the server
    sends first in every turn - replaces it outright. ``value`` is a deep copy, so callers can
    mutate it freely.
    """

    def __init__(self, initial: Any = None) -> None:
        self._doc: Any = copy.deepcopy(initial)
        self._patches_applied = 0

    @property
    def value(self) -> Any:
        """The current document as plain Python JSON (``None`` before any state is known)."""
        return copy.deepcopy(self._doc)

    @property
    def patches_applied(self) -> int:
        """How many non-empty patches have been applied so far."""
        return self._patches_applied

    def reset(self, doc: Any) -> None:
        """Replaces the document with a deep copy of ``doc`` (e.g. a client-managed state)."""
        self._doc = copy.deepcopy(doc)

    def apply(self, ops: Iterable[agent_pb2.JsonPatchOperation]) -> Any:
        """Applies wire patch operations in order and returns the new document (a deep copy).

        Raises ``CustomPatchError`` (DATA_LOSS) when an operation does not apply, e.g. an
        incremental patch arrives before the turn's whole-document replace.
        """
        plain = patch_operations(ops)
        if not plain:
            return self.value
        try:
            self._doc = jsonpatch.JsonPatch(plain).apply(self._doc, in_place=False)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
            raise CustomPatchError(
                f"custom-state patch {plain!r} does not apply to the tracked state: {err}; "
                "the live state is out of sync - re-read it with get_snapshot()"
            ) from err
        self._patches_applied += 1
        return self.value
