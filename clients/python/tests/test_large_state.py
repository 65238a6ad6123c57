"""What the server accepts, the client can read back: sessions larger than grpcio's 4 MiB default."""

import pytest

from agentd_client import AgentClient, ResourceExhaustedError
from agentd_client.client_base import ClientBase, with_default_limits


def test_reads_back_a_session_larger_than_grpcios_4_mib_default(agentd_address: str):
    big = "x" * (1024 * 1024)  # each turn stores this message and its echo: ~2 MiB per turn
    with AgentClient(agentd_address, timeout=60) as client:
        output = client.run("assistant", f"0:{big}")
        for turn in range(1, 3):
            output = client.run("assistant", f"{turn}:{big}", session_id=output.session_id)
        snapshot = client.get_snapshot("assistant", session_id=output.session_id)
    assert len(snapshot.state.messages) == 6
    assert sum(len(m.content[0].text) for m in snapshot.state.messages) > 6 * 1024 * 1024


def test_a_caller_set_receive_limit_wins_over_the_default(agentd_address: str):
    assert ("grpc.max_receive_message_length", ClientBase.DEFAULT_MAX_RECEIVE_BYTES) in with_default_limits(None)
    limited = [("grpc.max_receive_message_length", 1024 * 1024)]
    assert with_default_limits(limited) == limited
    with AgentClient(agentd_address, timeout=60) as writer:
        output = writer.run("assistant", "y" * (700 * 1024))  # the message and its echo: ~1.4 MiB of state
    with AgentClient(agentd_address, timeout=60, options=limited) as reader:
        with pytest.raises(ResourceExhaustedError):
            reader.get_snapshot("assistant", session_id=output.session_id)
