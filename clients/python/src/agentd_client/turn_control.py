"""Control inputs of a conversation (cancel and steer a running turn): their bookkeeping."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, NamedTuple, Optional

from agentd.v1 import agent_pb2

from .enums import InputAckResult
from .errors import InvalidArgumentError, UnavailableError
from .inputs import InputLike, build_input, new_request_id

if TYPE_CHECKING:  # pragma: no cover
    from .turn import TurnRecord

__all__ = ["SteerResult", "ControlAcks", "cancel_input", "steer_inputs", "CONTROL_LOST"]

#: Why a control input failed when its stream broke before the server answered it.
CONTROL_LOST = (
    "the stream broke before the server answered this control input; it may or may not have "
    "taken effect (control inputs are not re-sent)"
)


class SteerResult(NamedTuple):
    """What became of a steer: ``ack.result`` is ``INPUT_ACK_RESULT_STEERED`` (the running
    turn took the message; ``turn`` is None) or ``INPUT_ACK_RESULT_QUEUED`` (it runs as
    ``turn``)."""

    ack: agent_pb2.InputAck
    turn: Optional["TurnRecord"]

    @property
    def result(self) -> InputAckResult:
        """``ack.result`` as an :class:`InputAckResult` (``print`` shows its name)."""
        return InputAckResult.of(self.ack.result)


def cancel_input() -> agent_pb2.AgentInput:
    """A cancel input with a new request ID."""
    return agent_pb2.AgentInput(cancel=True, request_id=new_request_id())


def steer_inputs(
    value: InputLike, request_id: Optional[str] = None
) -> "tuple[agent_pb2.AgentInput, agent_pb2.AgentInput]":
    """The steer input to send and the plain turn input it becomes when queued (re-sent as
    such after a reconnect). Raises ``InvalidArgumentError`` without a message, or with a
    resume or detach."""
    plain = build_input(value, request_id=request_id)
    if not plain.HasField("message") or plain.detach or plain.HasField("resume"):
        raise InvalidArgumentError("steer() takes a message only (no resume, no detach)")
    plain.steer = False
    plain.cancel = False
    wire = agent_pb2.AgentInput()
    wire.CopyFrom(plain)
    wire.steer = True
    return wire, plain


class ControlAcks:
    """Acks received and not yet picked up, by request ID, and the stream generation: a
    control input sent on an earlier stream (before a reconnect) is lost, never re-sent."""

    def __init__(self) -> None:
        self._acks: Dict[str, agent_pb2.InputAck] = {}
        #: Streams reopened so far.
        self.epoch = 0

    def record(self, ack: agent_pb2.InputAck) -> None:
        if ack.request_id:
            self._acks[ack.request_id] = ack

    def take(self, request_id: str, epoch: int) -> Optional[agent_pb2.InputAck]:
        """The ack of ``request_id`` once it arrived (None while waiting); raises
        ``UnavailableError`` when the stream it was sent on was replaced first."""
        ack = self._acks.pop(request_id, None)
        if ack is not None:
            return ack
        if self.epoch != epoch:
            raise UnavailableError(CONTROL_LOST)
        return None

    def reopened(self) -> None:
        self.epoch += 1
        self._acks.clear()
