from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_MODEL: _ClassVar[Role]
    ROLE_SYSTEM: _ClassVar[Role]
    ROLE_TOOL: _ClassVar[Role]
ROLE_UNSPECIFIED: Role
ROLE_USER: Role
ROLE_MODEL: Role
ROLE_SYSTEM: Role
ROLE_TOOL: Role

class Message(_message.Message):
    __slots__ = ("role", "content", "metadata")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    role: Role
    content: _containers.RepeatedCompositeFieldContainer[Part]
    metadata: _struct_pb2.Struct
    def __init__(self, role: _Optional[_Union[Role, str]] = ..., content: _Optional[_Iterable[_Union[Part, _Mapping]]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Part(_message.Message):
    __slots__ = ("text", "media", "tool_request", "tool_response", "data", "reasoning", "custom", "metadata")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MEDIA_FIELD_NUMBER: _ClassVar[int]
    TOOL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    text: str
    media: Media
    tool_request: ToolRequest
    tool_response: ToolResponse
    data: _struct_pb2.Value
    reasoning: str
    custom: _struct_pb2.Struct
    metadata: _struct_pb2.Struct
    def __init__(self, text: _Optional[str] = ..., media: _Optional[_Union[Media, _Mapping]] = ..., tool_request: _Optional[_Union[ToolRequest, _Mapping]] = ..., tool_response: _Optional[_Union[ToolResponse, _Mapping]] = ..., data: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., reasoning: _Optional[str] = ..., custom: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Media(_message.Message):
    __slots__ = ("url", "content_type")
    URL_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    url: str
    content_type: str
    def __init__(self, url: _Optional[str] = ..., content_type: _Optional[str] = ...) -> None: ...

class ToolRequest(_message.Message):
    __slots__ = ("ref", "name", "input")
    REF_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    ref: str
    name: str
    input: _struct_pb2.Value
    def __init__(self, ref: _Optional[str] = ..., name: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class ToolResponse(_message.Message):
    __slots__ = ("ref", "name", "output")
    REF_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ref: str
    name: str
    output: _struct_pb2.Value
    def __init__(self, ref: _Optional[str] = ..., name: _Optional[str] = ..., output: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("name", "parts", "metadata")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    parts: _containers.RepeatedCompositeFieldContainer[Part]
    metadata: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., parts: _Optional[_Iterable[_Union[Part, _Mapping]]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
