import datetime

from agentd.v1 import agent_pb2 as _agent_pb2
from agentd.v1 import state_pb2 as _state_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WebhookDeliveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WEBHOOK_DELIVERY_STATE_UNSPECIFIED: _ClassVar[WebhookDeliveryState]
    WEBHOOK_DELIVERY_STATE_PENDING: _ClassVar[WebhookDeliveryState]
    WEBHOOK_DELIVERY_STATE_DELIVERED: _ClassVar[WebhookDeliveryState]
    WEBHOOK_DELIVERY_STATE_FAILED: _ClassVar[WebhookDeliveryState]
WEBHOOK_DELIVERY_STATE_UNSPECIFIED: WebhookDeliveryState
WEBHOOK_DELIVERY_STATE_PENDING: WebhookDeliveryState
WEBHOOK_DELIVERY_STATE_DELIVERED: WebhookDeliveryState
WEBHOOK_DELIVERY_STATE_FAILED: WebhookDeliveryState

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

class AttachInvocationRequest(_message.Message):
    __slots__ = ("agent", "snapshot_id", "after_sequence")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    snapshot_id: str
    after_sequence: int
    def __init__(self, agent: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class AttachInvocationResponse(_message.Message):
    __slots__ = ("chunk", "output")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    chunk: _agent_pb2.AgentStreamChunk
    output: _agent_pb2.AgentOutput
    def __init__(self, chunk: _Optional[_Union[_agent_pb2.AgentStreamChunk, _Mapping]] = ..., output: _Optional[_Union[_agent_pb2.AgentOutput, _Mapping]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[_agent_pb2.AgentInfo]
    def __init__(self, agents: _Optional[_Iterable[_Union[_agent_pb2.AgentInfo, _Mapping]]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "agent", "labels", "turn_count", "head_snapshot_id", "head_status", "created_at", "updated_at", "expires_at", "ttl", "usage")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    HEAD_SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    HEAD_STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    agent: str
    labels: _containers.ScalarMap[str, str]
    turn_count: int
    head_snapshot_id: str
    head_status: _state_pb2.SnapshotStatus
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    ttl: _duration_pb2.Duration
    usage: _state_pb2.Usage
    def __init__(self, session_id: _Optional[str] = ..., agent: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., turn_count: _Optional[int] = ..., head_snapshot_id: _Optional[str] = ..., head_status: _Optional[_Union[_state_pb2.SnapshotStatus, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., usage: _Optional[_Union[_state_pb2.Usage, _Mapping]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("agent", "labels", "updated_after", "page_size", "page_token")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGENT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent: str
    labels: _containers.ScalarMap[str, str]
    updated_after: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, agent: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., updated_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class UpdateSessionRequest(_message.Message):
    __slots__ = ("session_id", "set_labels", "remove_labels", "ttl", "clear_ttl")
    class SetLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SET_LABELS_FIELD_NUMBER: _ClassVar[int]
    REMOVE_LABELS_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    CLEAR_TTL_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    set_labels: _containers.ScalarMap[str, str]
    remove_labels: _containers.RepeatedScalarFieldContainer[str]
    ttl: _duration_pb2.Duration
    clear_ttl: bool
    def __init__(self, session_id: _Optional[str] = ..., set_labels: _Optional[_Mapping[str, str]] = ..., remove_labels: _Optional[_Iterable[str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., clear_ttl: _Optional[bool] = ...) -> None: ...

class UpdateSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session_id", "request_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    request_id: str
    def __init__(self, session_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class SendInvocationInputRequest(_message.Message):
    __slots__ = ("agent", "snapshot_id", "input")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    agent: str
    snapshot_id: str
    input: _agent_pb2.AgentInput
    def __init__(self, agent: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., input: _Optional[_Union[_agent_pb2.AgentInput, _Mapping]] = ...) -> None: ...

class SendInvocationInputResponse(_message.Message):
    __slots__ = ("ack",)
    ACK_FIELD_NUMBER: _ClassVar[int]
    ack: _agent_pb2.InputAck
    def __init__(self, ack: _Optional[_Union[_agent_pb2.InputAck, _Mapping]] = ...) -> None: ...

class ListWebhookDeliveriesRequest(_message.Message):
    __slots__ = ("state", "page_size", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: WebhookDeliveryState
    page_size: int
    page_token: str
    def __init__(self, state: _Optional[_Union[WebhookDeliveryState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesResponse(_message.Message):
    __slots__ = ("deliveries", "next_page_token")
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[WebhookDelivery]
    next_page_token: str
    def __init__(self, deliveries: _Optional[_Iterable[_Union[WebhookDelivery, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WebhookDelivery(_message.Message):
    __slots__ = ("webhook_id", "type", "agent", "session_id", "snapshot_id", "state", "attempts", "created_at", "last_attempt_at", "next_attempt_at", "last_error", "url")
    WEBHOOK_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    webhook_id: str
    type: str
    agent: str
    session_id: str
    snapshot_id: str
    state: WebhookDeliveryState
    attempts: int
    created_at: _timestamp_pb2.Timestamp
    last_attempt_at: _timestamp_pb2.Timestamp
    next_attempt_at: _timestamp_pb2.Timestamp
    last_error: str
    url: str
    def __init__(self, webhook_id: _Optional[str] = ..., type: _Optional[str] = ..., agent: _Optional[str] = ..., session_id: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., state: _Optional[_Union[WebhookDeliveryState, str]] = ..., attempts: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_attempt_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., url: _Optional[str] = ...) -> None: ...
