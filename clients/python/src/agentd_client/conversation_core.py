"""Transport-independent bookkeeping of a Chat conversation (shared by sync and asyncio)."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, List, Optional

import grpc

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from .custom_state import CustomState
from .errors import (
    AgentdError,
    CancelledError,
    ConversationClosedError,
    CustomPatchError,
    FailedPreconditionError,
    InternalError,
)
from .json_values import state_custom
from .retrier import Deadline, Retrier, RetryStreak
from .turn import TurnRecord
from .turn_control import ControlAcks

__all__ = ["ConversationCore"]


class ConversationCore:
    """Routes ``ChatResponse``s to turns and tracks what a conversation has learned.

    Guarantees: chunks go to the oldest turn that has not ended, in arrival order; every
    ``custom_patch`` is applied to ``custom`` before its chunk is handed to a turn; the latest
    non-empty TurnEnd snapshot ID becomes ``snapshot_id``; the final ``AgentOutput`` settles
    ``output``, ``session_id``, ``snapshot_id`` and (client-managed) ``state``, and ends every
    turn still open. After a failure every later read re-raises the same ``AgentdError``.

    Reconnect bookkeeping (the transports open the new stream): ``_reconnect_init`` is the
    init of a new Chat - the session by ID once a TurnEnd with a snapshot named it, the
    original init before any TurnEnd, None when the conversation cannot be resumed (a
    client-managed one after its first TurnEnd); ``_replay`` the inputs whose TurnEnd has
    not arrived, in order (the detach input last). After ``_begin_reconnect`` the first
    chunks of the re-sent turn in flight are dropped, as many as it had delivered, so no chunk
    is delivered twice; a TurnEnd is always delivered (once: it ends its turn).
    """

    def __init__(
        self,
        init: agent_pb2.AgentInit,
        *,
        retrier: Optional[Retrier] = None,
        timeout: Optional[float] = None,
    ) -> None:
        #: The agent this conversation talks to.
        self.agent: str = init.agent
        self._init_sent = agent_pb2.AgentInit()
        self._init_sent.CopyFrom(init)
        self._retrier = retrier if retrier is not None else Retrier(None)
        self._deadline = Deadline(timeout)
        self._detach_input: Optional[agent_pb2.AgentInput] = None
        self._skip = 0
        self._turn_ends = 0
        self._server_managed = bool(init.session_id or init.snapshot_id)
        self._streak = RetryStreak()
        # A reopened Chat that has delivered nothing yet (see _retry_delay).
        self._reopened = False
        self._progressed = False
        self._session_id: Optional[str] = init.session_id or None
        self._snapshot_id: Optional[str] = init.snapshot_id or None
        self._state: Optional[state_pb2.SessionState] = None
        initial_custom: Any = None
        if init.HasField("state"):
            self._state = state_pb2.SessionState()
            self._state.CopyFrom(init.state)
            self._session_id = self._session_id or init.state.session_id or None
            initial_custom = state_custom(init.state)
        self._custom = CustomState(initial_custom)
        self._pending: Deque[TurnRecord] = deque()
        self._output: Optional[agent_pb2.AgentOutput] = None
        self._error: Optional[AgentdError] = None
        self._input_closed = False
        #: Acks of cancel and steer inputs, by request ID.
        self._controls = ControlAcks()

    @property
    def custom(self) -> Any:
        """The live custom state as plain Python JSON: the initial/client-managed state with
        every streamed patch applied (a deep copy; ``None`` until any state is known)."""
        return self._custom.value

    @property
    def snapshot_id(self) -> Optional[str]:
        """The latest turn-end snapshot ID seen (the resume source until the first TurnEnd;
        the pending snapshot ID after ``detach``); None for client-managed agents."""
        return self._snapshot_id

    @property
    def state(self) -> Optional[state_pb2.SessionState]:
        """Client-managed agents: the full state from the final output (pass it to the next
        ``client.chat(agent, state=...)``); before that, the state the conversation started
        from. None for server-managed agents."""
        return self._state

    @property
    def finished(self) -> bool:
        """True once the conversation ended (output received, failed or cancelled)."""
        return self._output is not None or self._error is not None

    @property
    def session_id(self) -> Optional[str]:
        """The session ID: from the resume source, or - for a fresh session - from the
        first TurnEnd (or the output)."""
        return self._session_id

    def _settled_output(self) -> Optional[agent_pb2.AgentOutput]:
        """The final output once it arrived, None while the conversation runs; raises the
        conversation's error once it failed."""
        if self._error is not None:
            raise self._error
        return self._output

    def _broken_stream_error(self) -> AgentdError:
        """The error of a stream that ended without an output (retried like a reset)."""
        return InternalError(
            f"the Chat stream with {self.agent!r} ended without an AgentOutput; "
            "the connection or the server broke it"
        )

    def _reconnect_init(self) -> Optional[agent_pb2.AgentInit]:
        """The init of a new Chat that continues this conversation, or None when it cannot."""
        if self._turn_ends == 0:
            init = agent_pb2.AgentInit()
            init.CopyFrom(self._init_sent)
            return init
        if self._server_managed and self._session_id:
            return agent_pb2.AgentInit(
                agent=self.agent, session_id=self._session_id, busy_policy=self._init_sent.busy_policy
            )
        return None

    def _replay(self) -> List[agent_pb2.AgentInput]:
        """The inputs to re-send on a new Chat, in order: every one whose TurnEnd has not
        arrived, then the detach input."""
        inputs = [turn._input for turn in self._pending if turn._input is not None]
        if self._detach_input is not None:
            inputs.append(self._detach_input)
        return inputs

    def _retry_delay(self, error: AgentdError, *, retryable: Optional[bool] = None) -> Optional[float]:
        """The backoff before reconnecting after ``error``, or None when the conversation must
        fail with it (the caller closed it, retries are off or spent, the deadline is too near,
        the error is final, or the conversation cannot be resumed)."""
        if self.finished or self._reconnect_init() is None:
            return None
        # A reopened Chat refused ABORTED (busy) before anything arrived met its own dropped
        # invocation, which holds the session until agentd notices the broken connection
        # (nothing ran: the busy check comes first): retried like a reset, within the budget.
        if self._reopened and not self._progressed and error.code == grpc.StatusCode.ABORTED:
            retryable = True
        return self._retrier.plan("Chat", self._streak, error, self._deadline, retryable=retryable)

    def _begin_reconnect(self) -> None:
        """Drops, from the new stream, as many chunks of the turn in flight as it delivered;
        forgets the control inputs of the broken stream (unanswered steers leave the turns)."""
        self._controls.reopened()
        for turn in [t for t in self._pending if t._steer]:
            self._pending.remove(turn)
            turn._finish()
        self._skip = self._pending[0]._received if self._pending else 0
        self._reopened = True
        self._progressed = False

    def _closed_by_client(self) -> bool:
        """Takes no more input and, unless the conversation already ended, fails it with
        CANCELLED. Returns True when the caller must cancel its call."""
        self._input_closed = True
        if self.finished:
            return False
        self._fail(CancelledError(f"the conversation with {self.agent!r} was closed by the client"))
        return True

    def _ended(self) -> None:
        """Called once the output settled or the conversation failed; transports override it to
        release their request side."""

    def _ensure_accepting_input(self) -> None:
        if self._error is not None:
            raise ConversationClosedError(
                f"the conversation with {self.agent!r} failed ({self._error}); start a new one"
            )
        if self._output is not None or self._input_closed:
            raise ConversationClosedError(
                f"the conversation with {self.agent!r} takes no more input (output() or "
                "detach() was called); start a new one with client.chat()"
            )

    def _check_cancellable(self, turn: TurnRecord) -> None:
        """Raises unless ``turn`` is the running one (the oldest pending, not a steer)."""
        self._ensure_accepting_input()
        if not self._pending or self._pending[0] is not turn or turn._steer:
            raise FailedPreconditionError(
                "only the running turn (the oldest that has not ended) can be cancelled; "
                "this one is queued behind it"
            )

    def _take_ack(self, request_id: str, epoch: int) -> Optional[agent_pb2.InputAck]:
        """The ack of a control input once it arrived (None while waiting); raises when its
        stream was replaced or the conversation ended first."""
        ack = self._controls.take(request_id, epoch)
        if ack is not None:
            return ack
        if self._error is not None:
            raise self._error
        if self._output is not None:
            raise ConversationClosedError(
                f"the conversation with {self.agent!r} ended before the control input was answered"
            )
        return None

    def _on_ack(self, ack: agent_pb2.InputAck) -> None:
        """A steer's fate settles its tentative turn (dropped when the running turn took it,
        kept as a turn when queued); the ack waits for its caller."""
        for turn in self._pending:
            if turn._steer and turn._input is not None and turn._input.request_id == ack.request_id:
                if ack.result == agent_pb2.INPUT_ACK_RESULT_QUEUED:
                    turn._steer = False
                else:
                    self._pending.remove(turn)
                break
        self._controls.record(ack)

    def _route(self, response: agent_service_pb2.ChatResponse) -> None:
        patch_error: Optional[CustomPatchError] = None
        if response.HasField("chunk") and response.chunk.HasField("input_ack"):
            # Answers a control input: part of no turn, never re-sent by a reconnect.
            self._streak.reset()
            self._progressed = True
            self._on_ack(response.chunk.input_ack)
            return
        if response.HasField("chunk"):
            chunk = response.chunk
            if self._skip and not chunk.HasField("turn_end"):
                self._skip -= 1  # delivered before the reconnect
                return
            self._skip = 0
            self._streak.reset()
            self._progressed = True
            if len(chunk.custom_patch) > 0:
                try:
                    self._custom.apply(chunk.custom_patch)
                except CustomPatchError as err:
                    patch_error = err
            head = self._pending[0] if self._pending else None
            if head is not None:
                head._receive(chunk)
            if chunk.HasField("turn_end"):
                self._turn_ends += 1
                if chunk.turn_end.snapshot_id:
                    self._server_managed = True
                    self._snapshot_id = chunk.turn_end.snapshot_id
                if chunk.turn_end.session_id:
                    self._session_id = chunk.turn_end.session_id
                if head is not None:
                    self._pending.popleft()
        if response.HasField("output"):
            self._settle(response.output)
        if patch_error is not None:
            raise patch_error

    def _settle(self, output: agent_pb2.AgentOutput) -> None:
        self._output = output
        if output.session_id:
            self._session_id = output.session_id
        if output.snapshot_id:
            self._snapshot_id = output.snapshot_id
        if output.HasField("state"):
            self._state = output.state
            self._custom.reset(state_custom(output.state))
            self._session_id = self._session_id or output.state.session_id or None
        self._end_open_turns()
        self._ended()

    def _fail(self, error: AgentdError) -> AgentdError:
        if self._error is None:
            self._error = error
        self._end_open_turns()
        self._ended()
        return self._error

    def _end_open_turns(self) -> None:
        while self._pending:
            self._pending.popleft()._finish()
