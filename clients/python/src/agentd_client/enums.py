"""The protocol's enums as Python enums, named as in the proto (``SNAPSHOT_STATUS_ABORTED``).

They are ``IntEnum``s, so they compare equal to the generated ``state_pb2`` / ``agent_pb2``
constants and to the plain ints in the generated messages (``output.finish_reason ==
FinishReason.FINISH_REASON_STOP``), while ``print()``, ``str()`` and f-strings show the name.
``FinishReason(output.finish_reason)`` names a value read from a message; a value this client
does not know yet (a newer server) becomes a member named ``<ENUM>_<value>`` instead of
raising.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any, TypeVar

__all__ = ["FinishReason", "SnapshotStatus", "InputAckResult", "AbortResult"]

_E = TypeVar("_E", bound="ProtoEnum")


class ProtoEnum(enum.IntEnum):
    """An ``IntEnum`` of a proto enum whose ``str()`` and ``format()`` are the member's name."""

    def __str__(self) -> str:
        return self.name

    def __format__(self, format_spec: str) -> str:
        return format(self.name, format_spec)

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        # A value of a newer proto: an unnamed member, so results never raise on it.
        member = int.__new__(cls, value)
        member._name_ = f"{cls.__name__}_{value}"
        member._value_ = value
        return member

    @classmethod
    def of(cls: "type[_E]", value: int) -> _E:
        """The member of ``value`` (an int from a generated message)."""
        return cls(int(value))


class FinishReason(ProtoEnum):
    """Why a turn or an invocation ended (``agentd.v1.FinishReason``)."""

    FINISH_REASON_UNSPECIFIED = 0
    FINISH_REASON_STOP = 1
    FINISH_REASON_LENGTH = 2
    FINISH_REASON_BLOCKED = 3
    FINISH_REASON_INTERRUPTED = 4
    FINISH_REASON_OTHER = 5
    FINISH_REASON_UNKNOWN = 6
    FINISH_REASON_ABORTED = 7
    FINISH_REASON_DETACHED = 8
    FINISH_REASON_FAILED = 9


class SnapshotStatus(ProtoEnum):
    """A snapshot's status (``agentd.v1.SnapshotStatus``)."""

    SNAPSHOT_STATUS_UNSPECIFIED = 0
    SNAPSHOT_STATUS_PENDING = 1
    SNAPSHOT_STATUS_COMPLETED = 2
    SNAPSHOT_STATUS_FAILED = 3
    SNAPSHOT_STATUS_ABORTED = 4
    SNAPSHOT_STATUS_EXPIRED = 5

    @property
    def status(self) -> "SnapshotStatus":
        """Deprecated: ``abort`` returned an ``AbortResponse`` before and now returns the status
        itself; ``.status`` returns the status unchanged for code written against the old shape."""
        warnings.warn(
            "abort() returns the SnapshotStatus itself; drop the .status",
            DeprecationWarning,
            stacklevel=2,
        )
        return self


#: What ``AgentClient.abort`` returns: ``SNAPSHOT_STATUS_ABORTED``, or the terminal status
#: the snapshot already had.
AbortResult = SnapshotStatus


class InputAckResult(ProtoEnum):
    """What became of a control input (``agentd.v1.InputAckResult``): ``InputAck.result``."""

    INPUT_ACK_RESULT_UNSPECIFIED = 0
    INPUT_ACK_RESULT_CANCELLED = 1
    INPUT_ACK_RESULT_NOTHING_TO_CANCEL = 2
    INPUT_ACK_RESULT_STEERED = 3
    INPUT_ACK_RESULT_QUEUED = 4
