from agentd.v1 import agent_pb2 as _agent_pb2
from agentd.v1 import state_pb2 as _state_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatRequest(_message.Message):
    __slots__ = ("init", "input")
    INIT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    init: _agent_pb2.AgentInit
    input: _agent_pb2.AgentInput
    def __init__(self, init: _Optional[_Union[_agent_pb2.AgentInit, _Mapping]] = ..., input: _Optional[_Union[_agent_pb2.AgentInput, _Mapping]] = ...) -> None: ...

class ChatResponse(_message.Message):
    __slots__ = ("chunk", "output")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    chunk: _agent_pb2.AgentStreamChunk
    output: _agent_pb2.AgentOutput
    def __init__(self, chunk: _Optional[_Union[_agent_pb2.AgentStreamChunk, _Mapping]] = ..., output: _Optional[_Union[_agent_pb2.AgentOutput, _Mapping]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("init", "input")
    INIT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    init: _agent_pb2.AgentInit
    input: _agent_pb2.AgentInput
    def __init__(self, init: _Optional[_Union[_agent_pb2.AgentInit, _Mapping]] = ..., input: _Optional[_Union[_agent_pb2.AgentInput, _Mapping]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ("output",)
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    output: _agent_pb2.AgentOutput
    def __init__(self, output: _Optional[_Union[_agent_pb2.AgentOutput, _Mapping]] = ...) -> None: ...

class RunStreamRequest(_message.Message):
    __slots__ = ("init", "input")
    INIT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    init: _agent_pb2.AgentInit
    input: _agent_pb2.AgentInput
    def __init__(self, init: _Optional[_Union[_agent_pb2.AgentInit, _Mapping]] = ..., input: _Optional[_Union[_agent_pb2.AgentInput, _Mapping]] = ...) -> None: ...

class RunStreamResponse(_message.Message):
    __slots__ = ("chunk", "output")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    chunk: _agent_pb2.AgentStreamChunk
    output: _agent_pb2.AgentOutput
    def __init__(self, chunk: _Optional[_Union[_agent_pb2.AgentStreamChunk, _Mapping]] = ..., output: _Optional[_Union[_agent_pb2.AgentOutput, _Mapping]] = ...) -> None: ...

class GetSnapshotRequest(_message.Message):
    __slots__ = ("agent", "snapshot_id", "session_id")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    snapshot_id: str
    session_id: str
    def __init__(self, agent: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class GetSnapshotResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: _state_pb2.Snapshot
    def __init__(self, snapshot: _Optional[_Union[_state_pb2.Snapshot, _Mapping]] = ...) -> None: ...

class ListSnapshotsRequest(_message.Message):
    __slots__ = ("agent", "session_id", "page_size", "page_token", "include_state")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STATE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    session_id: str
    page_size: int
    page_token: str
    include_state: bool
    def __init__(self, agent: _Optional[str] = ..., session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_state: _Optional[bool] = ...) -> None: ...

class ListSnapshotsResponse(_message.Message):
    __slots__ = ("snapshots", "next_page_token")
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    snapshots: _containers.RepeatedCompositeFieldContainer[_state_pb2.Snapshot]
    next_page_token: str
    def __init__(self, snapshots: _Optional[_Iterable[_Union[_state_pb2.Snapshot, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchSnapshotRequest(_message.Message):
    __slots__ = ("agent", "snapshot_id")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    snapshot_id: str
    def __init__(self, agent: _Optional[str] = ..., snapshot_id: _Optional[str] = ...) -> None: ...

class WatchSnapshotResponse(_message.Message):
    __slots__ = ("snapshot_id", "status")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    status: _state_pb2.SnapshotStatus
    def __init__(self, snapshot_id: _Optional[str] = ..., status: _Optional[_Union[_state_pb2.SnapshotStatus, str]] = ...) -> None: ...

class AbortRequest(_message.Message):
    __slots__ = ("agent", "snapshot_id")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    snapshot_id: str
    def __init__(self, agent: _Optional[str] = ..., snapshot_id: _Optional[str] = ...) -> None: ...

class AbortResponse(_message.Message):
    __slots__ = ("snapshot_id", "status")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    status: _state_pb2.SnapshotStatus
    def __init__(self, snapshot_id: _Optional[str] = ..., status: _Optional[_Union[_state_pb2.SnapshotStatus, str]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[_agent_pb2.AgentInfo]
    def __init__(self, agents: _Optional[_Iterable[_Union[_agent_pb2.AgentInfo, _Mapping]]] = ...) -> None: ...
