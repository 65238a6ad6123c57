"""Transport-independent bookkeeping of a Chat conversation (shared by sync and asyncio)."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Optional

from agentd.v1 import agent_pb2, agent_service_pb2, state_pb2

from .custom_state import CustomState
from .errors import AgentdError, CancelledError, ConversationClosedError, CustomPatchError, InternalError
from .json_values import state_custom
from .turn import TurnRecord

__all__ = ["ConversationCore"]


class ConversationCore:
    """Routes ``ChatResponse``s to turns and tracks what a conversation has learned.

    Guarantees: chunks go to the oldest turn that has not ended, in arrival order; every
    ``custom_patch`` is applied to ``custom`` before its chunk is handed to a turn; the latest
    non-empty TurnEnd snapshot ID becomes ``snapshot_id``; the final ``AgentOutput`` settles
    ``output``, ``session_id``, ``snapshot_id`` and (client-managed) ``state``, and ends every
    turn still open. After a failure every later read re-raises the same ``AgentdError``.
    """

    def __init__(self, init: agent_pb2.AgentInit) -> None:
        #: The agent this conversation talks to.
        self.agent: str = init.agent
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

    def _stream_broke(self) -> AgentdError:
        """Fails the conversation because the stream ended without an output."""
        return self._fail(
            InternalError(
                f"the Chat stream with {self.agent!r} ended without an AgentOutput; "
                "the server broke the protocol"
            )
        )

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

    def _route(self, response: agent_service_pb2.ChatResponse) -> None:
        patch_error: Optional[CustomPatchError] = None
        if response.HasField("chunk"):
            chunk = response.chunk
            if len(chunk.custom_patch) > 0:
                try:
                    self._custom.apply(chunk.custom_patch)
                except CustomPatchError as err:
                    patch_error = err
            head = self._pending[0] if self._pending else None
            if head is not None:
                head._receive(chunk)
            if chunk.HasField("turn_end"):
                if chunk.turn_end.snapshot_id:
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
