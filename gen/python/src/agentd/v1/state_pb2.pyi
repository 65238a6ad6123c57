import datetime

from agentd.v1 import content_pb2 as _content_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SnapshotStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SNAPSHOT_STATUS_UNSPECIFIED: _ClassVar[SnapshotStatus]
    SNAPSHOT_STATUS_PENDING: _ClassVar[SnapshotStatus]
    SNAPSHOT_STATUS_COMPLETED: _ClassVar[SnapshotStatus]
    SNAPSHOT_STATUS_FAILED: _ClassVar[SnapshotStatus]
    SNAPSHOT_STATUS_ABORTED: _ClassVar[SnapshotStatus]
    SNAPSHOT_STATUS_EXPIRED: _ClassVar[SnapshotStatus]

class FinishReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINISH_REASON_UNSPECIFIED: _ClassVar[FinishReason]
    FINISH_REASON_STOP: _ClassVar[FinishReason]
    FINISH_REASON_LENGTH: _ClassVar[FinishReason]
    FINISH_REASON_BLOCKED: _ClassVar[FinishReason]
    FINISH_REASON_INTERRUPTED: _ClassVar[FinishReason]
    FINISH_REASON_OTHER: _ClassVar[FinishReason]
    FINISH_REASON_UNKNOWN: _ClassVar[FinishReason]
    FINISH_REASON_ABORTED: _ClassVar[FinishReason]
    FINISH_REASON_DETACHED: _ClassVar[FinishReason]
    FINISH_REASON_FAILED: _ClassVar[FinishReason]
SNAPSHOT_STATUS_UNSPECIFIED: SnapshotStatus
SNAPSHOT_STATUS_PENDING: SnapshotStatus
SNAPSHOT_STATUS_COMPLETED: SnapshotStatus
SNAPSHOT_STATUS_FAILED: SnapshotStatus
SNAPSHOT_STATUS_ABORTED: SnapshotStatus
SNAPSHOT_STATUS_EXPIRED: SnapshotStatus
FINISH_REASON_UNSPECIFIED: FinishReason
FINISH_REASON_STOP: FinishReason
FINISH_REASON_LENGTH: FinishReason
FINISH_REASON_BLOCKED: FinishReason
FINISH_REASON_INTERRUPTED: FinishReason
FINISH_REASON_OTHER: FinishReason
FINISH_REASON_UNKNOWN: FinishReason
FINISH_REASON_ABORTED: FinishReason
FINISH_REASON_DETACHED: FinishReason
FINISH_REASON_FAILED: FinishReason

class SessionState(_message.Message):
    __slots__ = ("session_id", "messages", "custom", "artifacts")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    messages: _containers.RepeatedCompositeFieldContainer[_content_pb2.Message]
    custom: _struct_pb2.Value
    artifacts: _containers.RepeatedCompositeFieldContainer[_content_pb2.Artifact]
    def __init__(self, session_id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_content_pb2.Message, _Mapping]]] = ..., custom: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., artifacts: _Optional[_Iterable[_Union[_content_pb2.Artifact, _Mapping]]] = ...) -> None: ...

class AgentError(_message.Message):
    __slots__ = ("status", "message", "details")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    status: str
    message: str
    details: _struct_pb2.Struct
    def __init__(self, status: _Optional[str] = ..., message: _Optional[str] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("snapshot_id", "session_id", "parent_id", "turn_index", "created_at", "updated_at", "heartbeat_at", "status", "finish_reason", "error", "state", "usage", "edit", "pending_inputs")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_INDEX_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    EDIT_FIELD_NUMBER: _ClassVar[int]
    PENDING_INPUTS_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    session_id: str
    parent_id: str
    turn_index: int
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    heartbeat_at: _timestamp_pb2.Timestamp
    status: SnapshotStatus
    finish_reason: FinishReason
    error: AgentError
    state: SessionState
    usage: Usage
    edit: SnapshotEdit
    pending_inputs: _containers.RepeatedCompositeFieldContainer[PendingInput]
    def __init__(self, snapshot_id: _Optional[str] = ..., session_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., turn_index: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., status: _Optional[_Union[SnapshotStatus, str]] = ..., finish_reason: _Optional[_Union[FinishReason, str]] = ..., error: _Optional[_Union[AgentError, _Mapping]] = ..., state: _Optional[_Union[SessionState, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., edit: _Optional[_Union[SnapshotEdit, _Mapping]] = ..., pending_inputs: _Optional[_Iterable[_Union[PendingInput, _Mapping]]] = ...) -> None: ...

class PendingInput(_message.Message):
    __slots__ = ("message", "respond", "restart", "request_id", "completed")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESPOND_FIELD_NUMBER: _ClassVar[int]
    RESTART_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    message: _content_pb2.Message
    respond: _containers.RepeatedCompositeFieldContainer[_content_pb2.Part]
    restart: _containers.RepeatedCompositeFieldContainer[_content_pb2.Part]
    request_id: str
    completed: bool
    def __init__(self, message: _Optional[_Union[_content_pb2.Message, _Mapping]] = ..., respond: _Optional[_Iterable[_Union[_content_pb2.Part, _Mapping]]] = ..., restart: _Optional[_Iterable[_Union[_content_pb2.Part, _Mapping]]] = ..., request_id: _Optional[str] = ..., completed: _Optional[bool] = ...) -> None: ...

class SnapshotEdit(_message.Message):
    __slots__ = ("edited_by", "tenant", "state_patch", "messages_patch")
    EDITED_BY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    STATE_PATCH_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_PATCH_FIELD_NUMBER: _ClassVar[int]
    edited_by: str
    tenant: str
    state_patch: _struct_pb2.ListValue
    messages_patch: _struct_pb2.ListValue
    def __init__(self, edited_by: _Optional[str] = ..., tenant: _Optional[str] = ..., state_patch: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., messages_patch: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "total_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    total_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...
