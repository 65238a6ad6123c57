"""Status codes map to AgentdError subclasses that carry the grpc.StatusCode."""

import grpc

from agentd.v1 import agent_pb2, state_pb2
from agentd_client import (
    AbortedError,
    AgentdError,
    FailedPreconditionError,
    NotFoundError,
    TurnFailedError,
    error_for_code,
)


def test_known_codes_map_to_their_subclass():
    err = error_for_code(grpc.StatusCode.NOT_FOUND, "agent 'x' is not served")
    assert isinstance(err, NotFoundError) and err.code == grpc.StatusCode.NOT_FOUND
    assert err.details == "agent 'x' is not served"


def test_aborted_maps_to_aborted_error():
    err = error_for_code(grpc.StatusCode.ABORTED, "session 's' is busy")
    assert isinstance(err, AbortedError) and err.code == grpc.StatusCode.ABORTED


def test_codes_without_a_subclass_map_to_the_base_class_with_that_code():
    err = error_for_code(grpc.StatusCode.DATA_LOSS, "lost")
    assert type(err) is AgentdError and err.code == grpc.StatusCode.DATA_LOSS


def test_subclasses_are_agentd_errors():
    assert issubclass(FailedPreconditionError, AgentdError)


def test_turn_failed_error_takes_the_in_band_status():
    output = agent_pb2.AgentOutput(
        finish_reason=state_pb2.FINISH_REASON_FAILED,
        error=state_pb2.AgentError(status="INTERNAL", message="boom"),
    )
    err = TurnFailedError(output)
    assert err.code == grpc.StatusCode.INTERNAL and err.details == "boom" and err.output is output
