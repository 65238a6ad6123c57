"""TERMINAL_STATUSES: the snapshot statuses that end a watch."""

from agentd.v1 import state_pb2
from agentd_client import TERMINAL_STATUSES


def test_terminal_statuses_are_completed_failed_aborted_and_expired():
    assert TERMINAL_STATUSES == {
        state_pb2.SNAPSHOT_STATUS_COMPLETED,
        state_pb2.SNAPSHOT_STATUS_FAILED,
        state_pb2.SNAPSHOT_STATUS_ABORTED,
        state_pb2.SNAPSHOT_STATUS_EXPIRED,
    }


def test_pending_is_not_terminal():
    assert state_pb2.SNAPSHOT_STATUS_PENDING not in TERMINAL_STATUSES
