"""``AgentClient``: the synchronous agentd client over a grpcio channel."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import grpc

from agentd.v1 import (
    agent_pb2,
    agent_service_pb2,
    agent_service_pb2_grpc,
    state_pb2,
)

from .conversation import Conversation
from .errors import TurnFailedError, error_from_rpc
from .inputs import InputLike, StateLike, build_init, build_input
from .json_values import message_text

__all__ = ["AgentClient", "TERMINAL_STATUSES"]

Metadata = Optional[Sequence[Tuple[str, str]]]

#: Snapshot statuses after which a snapshot never changes again (``expired`` is a pending
#: snapshot whose heartbeat went stale, computed on read).
TERMINAL_STATUSES = frozenset(
    {
        state_pb2.SNAPSHOT_STATUS_COMPLETED,
        state_pb2.SNAPSHOT_STATUS_FAILED,
        state_pb2.SNAPSHOT_STATUS_ABORTED,
        state_pb2.SNAPSHOT_STATUS_EXPIRED,
    }
)


class AgentClient:
    """Talks to one agentd server over gRPC (HTTP/2).

    ``AgentClient("127.0.0.1:50051")`` opens an insecure channel; pass ``credentials=`` for
    TLS, or ``channel=`` to use your own (then ``close`` leaves it open). ``metadata`` (e.g.
    ``[("authorization", "Bearer ...")]``) is sent with every call; ``timeout`` (seconds) is
    the default deadline of unary calls. Every method raises an ``AgentdError`` subclass
    carrying the call's ``grpc.StatusCode``. Use as a context manager to close the channel.
    Thread-safe (the channel is); conversations are not.
    """

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        channel: Optional[grpc.Channel] = None,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Optional[Sequence[Tuple[str, Any]]] = None,
        metadata: Metadata = None,
        timeout: Optional[float] = None,
    ) -> None:
        if channel is None:
            if not target:
                raise ValueError("AgentClient needs a target like '127.0.0.1:50051' or a channel")
            if credentials is not None:
                channel = grpc.secure_channel(target, credentials, options=options)
            else:
                channel = grpc.insecure_channel(target, options=options)
            self._owns_channel = True
        else:
            self._owns_channel = False
        self._channel = channel
        self._stub = agent_service_pb2_grpc.AgentServiceStub(channel)
        self._metadata = tuple(metadata or ())
        self._timeout = timeout

    @property
    def channel(self) -> grpc.Channel:
        """The underlying grpcio channel (e.g. for the generated stubs directly)."""
        return self._channel

    def close(self) -> None:
        """Closes the channel if this client created it. Idempotent."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> "AgentClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def chat(
        self,
        agent: str,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        timeout: Optional[float] = None,
    ) -> Conversation:
        """Opens a multi-turn conversation with ``agent``.

        Resume a server-managed agent's session with ``session_id`` (its latest snapshot),
        ``snapshot_id`` (a branch) or both; continue a client-managed agent with ``state``
        (a previous ``conversation.state``); pass none for a fresh session. ``timeout``
        bounds the whole conversation (default: none).
        """
        init = build_init(agent, session_id=session_id, snapshot_id=snapshot_id, state=state)
        conversation = Conversation(self._stub, init, metadata=self._metadata, timeout=timeout)
        return conversation

    def run(
        self,
        agent: str,
        input: Optional[InputLike] = None,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        detach: bool = False,
        metadata: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> agent_pb2.AgentOutput:
        """Runs one turn and returns its ``AgentOutput`` (in-band failures are returned with
        ``finish_reason`` FAILED, not raised). ``detach=True`` returns at once with the
        pending snapshot ID. ``metadata`` goes on the input message."""
        request = agent_service_pb2.RunRequest(
            init=build_init(agent, session_id=session_id, snapshot_id=snapshot_id, state=state),
            input=build_input(input, metadata=metadata, detach=detach),
        )
        return self._unary(self._stub.Run, request, timeout).output

    def run_text(
        self,
        agent: str,
        text: str,
        *,
        session_id: Optional[str] = None,
        snapshot_id: Optional[str] = None,
        state: Optional[StateLike] = None,
        timeout: Optional[float] = None,
    ) -> str:
        """Runs one turn with a user text and returns the reply's text. Raises
        ``TurnFailedError`` (with the in-band status code and the full output) when the
        turn failed."""
        output = self.run(
            agent, text, session_id=session_id, snapshot_id=snapshot_id, state=state, timeout=timeout
        )
        if output.finish_reason == state_pb2.FINISH_REASON_FAILED:
            raise TurnFailedError(output)
        return message_text(output.message)

    def get_snapshot(
        self,
        agent: str,
        snapshot_id: Optional[str] = None,
        *,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> state_pb2.Snapshot:
        """Returns a snapshot by ID, or the latest snapshot of ``session_id`` (with both, the
        session is asserted). Its ``state`` has the agent's state transform applied; use
        ``state_custom(snapshot.state)`` for the custom state as plain Python."""
        if not snapshot_id and not session_id:
            raise ValueError("get_snapshot needs snapshot_id or session_id")
        request = agent_service_pb2.GetSnapshotRequest(
            agent=agent, snapshot_id=snapshot_id or "", session_id=session_id or ""
        )
        return self._unary(self._stub.GetSnapshot, request, timeout).snapshot

    def list_snapshots(
        self,
        agent: str,
        session_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        include_state: bool = False,
        timeout: Optional[float] = None,
    ) -> agent_service_pb2.ListSnapshotsResponse:
        """Returns one page of a session's snapshots, newest first (``snapshots`` and
        ``next_page_token``, empty on the last page). ``page_size`` 0 means the server's
        default (50)."""
        request = agent_service_pb2.ListSnapshotsRequest(
            agent=agent,
            session_id=session_id,
            page_size=page_size,
            page_token=page_token,
            include_state=include_state,
        )
        return self._unary(self._stub.ListSnapshots, request, timeout)

    def iter_snapshots(
        self, agent: str, session_id: str, *, page_size: int = 0, include_state: bool = False
    ) -> Iterator[state_pb2.Snapshot]:
        """Yields every snapshot of a session, newest first, fetching pages as needed."""
        token = ""
        while True:
            page = self.list_snapshots(
                agent, session_id, page_size=page_size, page_token=token, include_state=include_state
            )
            yield from page.snapshots
            token = page.next_page_token
            if not token:
                return

    def watch_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> Iterator[agent_service_pb2.WatchSnapshotResponse]:
        """Yields the snapshot's status at once and on every change, and ends after a
        terminal status (completed, failed, aborted, expired) or when the server ends the
        stream.
        Leaving the loop early cancels the call."""
        request = agent_service_pb2.WatchSnapshotRequest(agent=agent, snapshot_id=snapshot_id)
        call = self._stub.WatchSnapshot(request, metadata=self._metadata, timeout=timeout)
        try:
            for update in call:
                yield update
                if update.status in TERMINAL_STATUSES:
                    return
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        finally:
            call.cancel()

    def wait_snapshot(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> "state_pb2.SnapshotStatus":
        """Watches a snapshot until it settles and returns its last status (e.g.
        ``SNAPSHOT_STATUS_COMPLETED``)."""
        status = state_pb2.SNAPSHOT_STATUS_UNSPECIFIED
        for update in self.watch_snapshot(agent, snapshot_id, timeout=timeout):
            status = update.status
        return status

    def abort(
        self, agent: str, snapshot_id: str, *, timeout: Optional[float] = None
    ) -> agent_service_pb2.AbortResponse:
        """Aborts a pending (detached) snapshot. The response's ``status`` is
        SNAPSHOT_STATUS_ABORTED on success, or the snapshot's existing terminal status."""
        request = agent_service_pb2.AbortRequest(agent=agent, snapshot_id=snapshot_id)
        return self._unary(self._stub.Abort, request, timeout)

    def list_agents(self, *, timeout: Optional[float] = None) -> List[agent_pb2.AgentInfo]:
        """Returns every served agent: name, description, state management, abortable, and
        the JSON Schema of its custom state (``struct_to_dict(info.state_schema)``)."""
        response = self._unary(self._stub.ListAgents, agent_service_pb2.ListAgentsRequest(), timeout)
        return list(response.agents)

    def _unary(self, method: Any, request: Any, timeout: Optional[float]) -> Any:
        try:
            return method(
                request,
                metadata=self._metadata,
                timeout=timeout if timeout is not None else self._timeout,
            )
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
