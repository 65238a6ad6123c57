"""The default retry budget is bounded by time (issue 47): a call made while agentd is down for
3 s - twice what the old 5-attempt budget waited at most - succeeds once agentd is back on the
same port, after more than 5 attempts, each retry starting within 30 s of the first failure."""

import threading
import time

from agentd_client import AgentClient, RetryPolicy
from conftest import AgentdProcess


def test_the_default_budget_rides_out_a_crash_and_restart(tmp_path):
    store = ["--store", f"sqlite:{tmp_path / 'agentd.db'}"]
    first = AgentdProcess(tmp_path / "first.log", store)
    port = first.address.rsplit(":", 1)[1]
    events = []
    with AgentClient(first.address, retry=RetryPolicy(on_retry=events.append)) as client:
        assert client.run_text("assistant", "before the crash") == "echo: before the crash"
        first.kill()
        result = {}

        def call() -> None:
            try:
                result["text"] = client.run_text("assistant", "while down")
            except Exception as error:  # noqa: BLE001 - reported by the assertion below
                result["error"] = error

        thread = threading.Thread(target=call)
        thread.start()
        time.sleep(3)  # the outage
        second = AgentdProcess(tmp_path / "second.log", [*store, "--port", port])
        try:
            thread.join(timeout=120)
            assert result == {"text": "echo: while down"}
        finally:
            second.stop()
    assert len(events) > 4, f"{len(events)} retries, want more than the old default's 4"
    assert [e.attempt for e in events] == list(range(2, len(events) + 2))
    assert all(e.procedure == "Run" and e.elapsed <= 30.0 for e in events)
