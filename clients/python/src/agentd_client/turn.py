"""One turn of a conversation: the streamed chunks of one input, up to its TurnEnd."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Deque, Iterator, List, Optional

from agentd.v1 import agent_pb2, content_pb2, state_pb2

from .enums import FinishReason

if TYPE_CHECKING:  # pragma: no cover
    from .conversation import Conversation

__all__ = ["TurnRecord", "Turn"]


class TurnRecord:
    """What has been received for one turn so far (shared by the sync and asyncio turns).

    Guarantees: ``text`` is the concatenation of every text part of every model chunk received
    for this turn (in order), ``artifacts`` every artifact chunk, ``turn_end`` the turn's
    ``TurnEnd`` once it arrived; ``done`` is True once the turn ended - at its TurnEnd, or
    without one when the conversation ended first (detach, failure, cancellation).
    """

    def __init__(self) -> None:
        self._buffer: Deque[agent_pb2.AgentStreamChunk] = deque()
        self._text: List[str] = []
        #: Artifacts streamed during this turn, in order.
        self.artifacts: List[content_pb2.Artifact] = []
        #: The turn's TurnEnd (None until it arrived, or if the conversation ended first).
        self.turn_end: Optional[agent_pb2.TurnEnd] = None
        self._done = False
        #: The input this turn answers (re-sent with its request ID after a reconnect).
        self._input: Optional[agent_pb2.AgentInput] = None
        #: Chunks received so far (a reconnect drops that many of the re-sent turn's chunks).
        self._received = 0
        #: Sent as a steer and not yet answered: a turn only if the server queues it.
        self._steer = False

    @property
    def done(self) -> bool:
        """True once no more chunks will arrive for this turn."""
        return self._done

    @property
    def text(self) -> str:
        """The model text streamed for this turn so far (all of it once ``done``)."""
        return "".join(self._text)

    @property
    def snapshot_id(self) -> Optional[str]:
        """The turn-end snapshot ID (None before TurnEnd, for client-managed agents and for
        failed turns)."""
        return (self.turn_end.snapshot_id or None) if self.turn_end else None

    @property
    def finish_reason(self) -> Optional[FinishReason]:
        """The turn's :class:`FinishReason` (None before TurnEnd): ``print`` shows its name."""
        return FinishReason.of(self.turn_end.finish_reason) if self.turn_end else None

    @property
    def finish_reason_name(self) -> Optional[str]:
        """The turn's finish reason as its enum name, e.g. ``"FINISH_REASON_STOP"``."""
        if self.turn_end is None:
            return None
        return state_pb2.FinishReason.Name(self.turn_end.finish_reason)

    @property
    def turn_index(self) -> Optional[int]:
        """The zero-based index of this turn in its session (None before TurnEnd)."""
        return self.turn_end.turn_index if self.turn_end else None

    @property
    def request_id(self) -> Optional[str]:
        """The request ID (idempotency key) of this turn's input."""
        return self._input.request_id if self._input is not None else None

    def _receive(self, chunk: agent_pb2.AgentStreamChunk) -> None:
        self._received += 1
        if chunk.HasField("model_chunk"):
            for part in chunk.model_chunk.content:
                if part.WhichOneof("kind") == "text":
                    self._text.append(part.text)
        if chunk.HasField("artifact"):
            self.artifacts.append(chunk.artifact)
        if chunk.HasField("turn_end"):
            self.turn_end = chunk.turn_end
            self._done = True
        self._buffer.append(chunk)

    def _finish(self) -> None:
        self._done = True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(done={self._done}, turn_index={self.turn_index}, "
            f"snapshot_id={self.snapshot_id!r}, text={self.text!r})"
        )


class Turn(TurnRecord):
    """A turn of a synchronous :class:`Conversation`, returned by ``send``.

    Iterating yields the turn's ``AgentStreamChunk``s as they arrive - model chunks, custom
    patches (already applied to ``conversation.custom`` when yielded), artifacts - and ends
    after the ``TurnEnd`` chunk. Each chunk is yielded once; chunks that arrived while another
    turn was being read are buffered and yielded first. ``wait()`` reads to the end without
    iterating. RPC failures raise an ``AgentdError`` from iteration / ``wait()``.
    """

    def __init__(self, conversation: "Conversation") -> None:
        super().__init__()
        self._conversation = conversation

    def __iter__(self) -> Iterator[agent_pb2.AgentStreamChunk]:
        while True:
            if self._buffer:
                yield self._buffer.popleft()
                continue
            if self._done:
                return
            self._conversation._read_next()

    def cancel(self) -> agent_pb2.InputAck:
        """Cancels this turn while it runs and keeps the conversation: the server aborts it
        (its TurnEnd says FINISH_REASON_ABORTED, nothing of it is written) and goes on with the
        next input. Returns the server's ``InputAck``: INPUT_ACK_RESULT_CANCELLED with the turn
        index, or INPUT_ACK_RESULT_NOTHING_TO_CANCEL when the turn had already ended (answered
        without a request when its TurnEnd had arrived). Reads the stream until the ack arrives
        (chunks read meanwhile are buffered for their turns).

        Sent once with its own request ID and never re-sent by a reconnect (a re-sent cancel
        could stop a later turn): ``UnavailableError`` if the stream broke first.
        ``FailedPreconditionError`` for a turn queued behind another (only the running turn
        can be cancelled); ``ConversationClosedError`` once the conversation takes no input."""
        return self._conversation._cancel(self)

    def texts(self) -> Iterator[str]:
        """Yields the text of each model chunk as it arrives (for printing as it streams)."""
        for chunk in self:
            if chunk.HasField("model_chunk"):
                text = "".join(
                    p.text for p in chunk.model_chunk.content if p.WhichOneof("kind") == "text"
                )
                if text:
                    yield text

    def wait(self) -> Optional[agent_pb2.TurnEnd]:
        """Reads until the turn ends and returns its ``TurnEnd`` (None when the conversation
        ended without one, e.g. after detach). Unread chunks are discarded."""
        for _ in self:
            pass
        return self.turn_end
