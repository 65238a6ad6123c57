"""agentd_client: a thin, idiomatic Python client for agentd over grpcio.

``AgentClient`` retries what may not have happened (``RetryPolicy``; ``retry=None`` turns it
off), giving every input a request ID so the server runs it once. It opens conversations (``chat``), runs single turns (``run``, ``run_text``),
reads / watches / aborts snapshots, attaches to the stream of detached work (``attach``), and
lists, labels and deletes sessions (``list_sessions``, ``get_session``, ``update_session``,
``delete_session``); ``agentd_client.aio.AsyncAgentClient``
is the asyncio twin. Errors are ``AgentdError`` subclasses carrying a ``grpc.StatusCode``. The generated
messages live in ``agentd.v1`` (package ``agentd-proto``).
"""

from .attached_run import AttachedRun
from .client import TERMINAL_STATUSES, AgentClient
from .conversation import Conversation
from .custom_state import CustomState, patch_operations
from .enums import AbortResult, FinishReason, InputAckResult, SnapshotStatus
from .errors import (
    AbortedError,
    AgentdError,
    CancelledError,
    ConversationClosedError,
    CustomPatchError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    TurnFailedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    error_for_code,
    error_from_rpc,
)
from .inputs import (
    BusyPolicyLike,
    InputLike,
    StateLike,
    TimeLike,
    TTLLike,
    build_init,
    build_input,
    new_request_id,
)
from .json_values import (
    dict_to_struct,
    message_text,
    python_to_value,
    state_custom,
    struct_to_dict,
    value_to_python,
)
from .retrier import ClientStats
from .retry_policy import DEFAULT_RETRY, RETRYABLE_CODES, RetryEvent, RetryPolicy
from .security import PEMSource, TLSConfig, TLSLike, TokenLike
from .turn import Turn, TurnRecord
from .turn_control import SteerResult

__all__ = [
    "AbortResult",
    "FinishReason",
    "InputAckResult",
    "SnapshotStatus",
    "SteerResult",
    "AgentClient",
    "AttachedRun",
    "Conversation",
    "Turn",
    "TurnRecord",
    "TERMINAL_STATUSES",
    "CustomState",
    "patch_operations",
    "AgentdError",
    "AbortedError",
    "CancelledError",
    "ConversationClosedError",
    "CustomPatchError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "TurnFailedError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "error_for_code",
    "error_from_rpc",
    "BusyPolicyLike",
    "InputLike",
    "StateLike",
    "TimeLike",
    "TTLLike",
    "build_init",
    "build_input",
    "new_request_id",
    "ClientStats",
    "DEFAULT_RETRY",
    "RETRYABLE_CODES",
    "RetryEvent",
    "RetryPolicy",
    "PEMSource",
    "TLSConfig",
    "TLSLike",
    "TokenLike",
    "dict_to_struct",
    "message_text",
    "python_to_value",
    "state_custom",
    "struct_to_dict",
    "value_to_python",
]
