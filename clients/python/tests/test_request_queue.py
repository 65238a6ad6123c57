"""RequestQueue feeds grpcio's request iterator and half-closes on close()."""

import threading

import pytest

from agentd_client.request_queue import RequestQueue


def test_iteration_yields_queued_requests_then_ends_after_close():
    q = RequestQueue()
    q.put(1)
    q.put(2)
    q.close()
    assert list(q) == [1, 2]


def test_iteration_blocks_until_a_request_is_put_from_another_thread():
    q = RequestQueue()
    seen = []
    reader = threading.Thread(target=lambda: seen.extend(q))
    reader.start()
    q.put("a")
    q.close()
    reader.join(timeout=5)
    assert seen == ["a"] and not reader.is_alive()


def test_put_after_close_raises():
    q = RequestQueue()
    q.close()
    q.close()
    with pytest.raises(RuntimeError):
        q.put(1)
