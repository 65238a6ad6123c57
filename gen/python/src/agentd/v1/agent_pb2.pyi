import datetime

from agentd.v1 import content_pb2 as _content_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from agentd.v1 import state_pb2 as _state_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BusyPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUSY_POLICY_UNSPECIFIED: _ClassVar[BusyPolicy]
    BUSY_POLICY_REJECT: _ClassVar[BusyPolicy]
    BUSY_POLICY_ENQUEUE: _ClassVar[BusyPolicy]
    BUSY_POLICY_INTERRUPT: _ClassVar[BusyPolicy]

class InputAckResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_ACK_RESULT_UNSPECIFIED: _ClassVar[InputAckResult]
    INPUT_ACK_RESULT_CANCELLED: _ClassVar[InputAckResult]
    INPUT_ACK_RESULT_NOTHING_TO_CANCEL: _ClassVar[InputAckResult]
    INPUT_ACK_RESULT_STEERED: _ClassVar[InputAckResult]
    INPUT_ACK_RESULT_QUEUED: _ClassVar[InputAckResult]

class StateManagement(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATE_MANAGEMENT_UNSPECIFIED: _ClassVar[StateManagement]
    STATE_MANAGEMENT_SERVER: _ClassVar[StateManagement]
    STATE_MANAGEMENT_CLIENT: _ClassVar[StateManagement]
BUSY_POLICY_UNSPECIFIED: BusyPolicy
BUSY_POLICY_REJECT: BusyPolicy
BUSY_POLICY_ENQUEUE: BusyPolicy
BUSY_POLICY_INTERRUPT: BusyPolicy
INPUT_ACK_RESULT_UNSPECIFIED: InputAckResult
INPUT_ACK_RESULT_CANCELLED: InputAckResult
INPUT_ACK_RESULT_NOTHING_TO_CANCEL: InputAckResult
INPUT_ACK_RESULT_STEERED: InputAckResult
INPUT_ACK_RESULT_QUEUED: InputAckResult
STATE_MANAGEMENT_UNSPECIFIED: StateManagement
STATE_MANAGEMENT_SERVER: StateManagement
STATE_MANAGEMENT_CLIENT: StateManagement

class AgentInit(_message.Message):
    __slots__ = ("agent", "session_id", "snapshot_id", "state", "busy_policy", "labels", "ttl", "state_patch", "messages_patch")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BUSY_POLICY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    STATE_PATCH_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_PATCH_FIELD_NUMBER: _ClassVar[int]
    agent: str
    session_id: str
    snapshot_id: str
    state: _state_pb2.SessionState
    busy_policy: BusyPolicy
    labels: _containers.ScalarMap[str, str]
    ttl: _duration_pb2.Duration
    state_patch: _containers.RepeatedCompositeFieldContainer[JsonPatchOperation]
    messages_patch: _containers.RepeatedCompositeFieldContainer[JsonPatchOperation]
    def __init__(self, agent: _Optional[str] = ..., session_id: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., state: _Optional[_Union[_state_pb2.SessionState, _Mapping]] = ..., busy_policy: _Optional[_Union[BusyPolicy, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., state_patch: _Optional[_Iterable[_Union[JsonPatchOperation, _Mapping]]] = ..., messages_patch: _Optional[_Iterable[_Union[JsonPatchOperation, _Mapping]]] = ...) -> None: ...

class AgentInput(_message.Message):
    __slots__ = ("message", "resume", "detach", "request_id", "cancel", "steer")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    DETACH_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    STEER_FIELD_NUMBER: _ClassVar[int]
    message: _content_pb2.Message
    resume: ToolResume
    detach: bool
    request_id: str
    cancel: bool
    steer: bool
    def __init__(self, message: _Optional[_Union[_content_pb2.Message, _Mapping]] = ..., resume: _Optional[_Union[ToolResume, _Mapping]] = ..., detach: _Optional[bool] = ..., request_id: _Optional[str] = ..., cancel: _Optional[bool] = ..., steer: _Optional[bool] = ...) -> None: ...

class ToolResume(_message.Message):
    __slots__ = ("respond", "restart")
    RESPOND_FIELD_NUMBER: _ClassVar[int]
    RESTART_FIELD_NUMBER: _ClassVar[int]
    respond: _containers.RepeatedCompositeFieldContainer[_content_pb2.Part]
    restart: _containers.RepeatedCompositeFieldContainer[_content_pb2.Part]
    def __init__(self, respond: _Optional[_Iterable[_Union[_content_pb2.Part, _Mapping]]] = ..., restart: _Optional[_Iterable[_Union[_content_pb2.Part, _Mapping]]] = ...) -> None: ...

class JsonPatchOperation(_message.Message):
    __slots__ = ("op", "path", "value")
    OP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    op: str
    path: str
    value: _struct_pb2.Value
    def __init__(self, op: _Optional[str] = ..., path: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., **kwargs) -> None: ...

class ModelChunk(_message.Message):
    __slots__ = ("role", "content", "index")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    role: _content_pb2.Role
    content: _containers.RepeatedCompositeFieldContainer[_content_pb2.Part]
    index: int
    def __init__(self, role: _Optional[_Union[_content_pb2.Role, str]] = ..., content: _Optional[_Iterable[_Union[_content_pb2.Part, _Mapping]]] = ..., index: _Optional[int] = ...) -> None: ...

class TurnEnd(_message.Message):
    __slots__ = ("snapshot_id", "finish_reason", "turn_index", "session_id", "usage")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    TURN_INDEX_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    finish_reason: _state_pb2.FinishReason
    turn_index: int
    session_id: str
    usage: _state_pb2.Usage
    def __init__(self, snapshot_id: _Optional[str] = ..., finish_reason: _Optional[_Union[_state_pb2.FinishReason, str]] = ..., turn_index: _Optional[int] = ..., session_id: _Optional[str] = ..., usage: _Optional[_Union[_state_pb2.Usage, _Mapping]] = ...) -> None: ...

class Takeover(_message.Message):
    __slots__ = ("superseded_after", "turn_index")
    SUPERSEDED_AFTER_FIELD_NUMBER: _ClassVar[int]
    TURN_INDEX_FIELD_NUMBER: _ClassVar[int]
    superseded_after: int
    turn_index: int
    def __init__(self, superseded_after: _Optional[int] = ..., turn_index: _Optional[int] = ...) -> None: ...

class AgentStreamChunk(_message.Message):
    __slots__ = ("model_chunk", "custom_patch", "artifact", "turn_end", "sequence", "takeover", "input_ack")
    MODEL_CHUNK_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_PATCH_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    TURN_END_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TAKEOVER_FIELD_NUMBER: _ClassVar[int]
    INPUT_ACK_FIELD_NUMBER: _ClassVar[int]
    model_chunk: ModelChunk
    custom_patch: _containers.RepeatedCompositeFieldContainer[JsonPatchOperation]
    artifact: _content_pb2.Artifact
    turn_end: TurnEnd
    sequence: int
    takeover: Takeover
    input_ack: InputAck
    def __init__(self, model_chunk: _Optional[_Union[ModelChunk, _Mapping]] = ..., custom_patch: _Optional[_Iterable[_Union[JsonPatchOperation, _Mapping]]] = ..., artifact: _Optional[_Union[_content_pb2.Artifact, _Mapping]] = ..., turn_end: _Optional[_Union[TurnEnd, _Mapping]] = ..., sequence: _Optional[int] = ..., takeover: _Optional[_Union[Takeover, _Mapping]] = ..., input_ack: _Optional[_Union[InputAck, _Mapping]] = ...) -> None: ...

class InputAck(_message.Message):
    __slots__ = ("request_id", "result", "turn_index")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TURN_INDEX_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    result: InputAckResult
    turn_index: int
    def __init__(self, request_id: _Optional[str] = ..., result: _Optional[_Union[InputAckResult, str]] = ..., turn_index: _Optional[int] = ...) -> None: ...

class AgentOutput(_message.Message):
    __slots__ = ("session_id", "snapshot_id", "message", "artifacts", "state", "finish_reason", "error", "usage")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    snapshot_id: str
    message: _content_pb2.Message
    artifacts: _containers.RepeatedCompositeFieldContainer[_content_pb2.Artifact]
    state: _state_pb2.SessionState
    finish_reason: _state_pb2.FinishReason
    error: _state_pb2.AgentError
    usage: _state_pb2.Usage
    def __init__(self, session_id: _Optional[str] = ..., snapshot_id: _Optional[str] = ..., message: _Optional[_Union[_content_pb2.Message, _Mapping]] = ..., artifacts: _Optional[_Iterable[_Union[_content_pb2.Artifact, _Mapping]]] = ..., state: _Optional[_Union[_state_pb2.SessionState, _Mapping]] = ..., finish_reason: _Optional[_Union[_state_pb2.FinishReason, str]] = ..., error: _Optional[_Union[_state_pb2.AgentError, _Mapping]] = ..., usage: _Optional[_Union[_state_pb2.Usage, _Mapping]] = ...) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("name", "description", "state_management", "abortable", "state_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    STATE_MANAGEMENT_FIELD_NUMBER: _ClassVar[int]
    ABORTABLE_FIELD_NUMBER: _ClassVar[int]
    STATE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    state_management: StateManagement
    abortable: bool
    state_schema: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., state_management: _Optional[_Union[StateManagement, str]] = ..., abortable: _Optional[bool] = ..., state_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
