"""Session lifecycle: labels at creation, list (filters, paging), get, update, delete, expiry.

The wire tests run against the real agentd of ``conftest.py`` (memory store). Every test labels
its sessions with a fresh ``suite`` value, so a list filtered by it sees that test's sessions
only, whatever else the shared server holds.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Dict, List

import grpc
import pytest

from agentd.v1 import agent_service_pb2, state_pb2
from agentd_client import (
    AgentClient,
    InvalidArgumentError,
    NotFoundError,
    build_init,
    message_text,
)
from agentd_client import service_calls as calls
from agentd_client.aio import AsyncAgentClient

from conftest import TOKEN_ALICE, TOKEN_BOB


def suite_label() -> str:
    return f"py-{uuid.uuid4().hex[:16]}"


def new_session(client: AgentClient, agent: str = "assistant", **kwargs) -> agent_service_pb2.Session:
    """Runs one turn on a new session of ``agent`` (``labels=``, ``ttl=`` ...) and returns its
    head as ``get_session`` reads it."""
    output = client.run(agent, "hello", **kwargs)
    assert output.session_id and output.finish_reason == state_pb2.FINISH_REASON_STOP
    return client.get_session(output.session_id)


def listed_ids(client: AgentClient, **filters) -> List[str]:
    return [s.session_id for s in client.list_sessions(**filters)]


# --- Requests built from the client's arguments (no server) ---


def test_build_init_carries_labels_and_ttl_as_timedelta_or_seconds():
    init = build_init("assistant", labels={"user": "u1"}, ttl=datetime.timedelta(minutes=30))
    assert dict(init.labels) == {"user": "u1"}
    assert init.HasField("ttl") and init.ttl.ToTimedelta() == datetime.timedelta(minutes=30)
    assert build_init("assistant", ttl=2.5).ttl.ToNanoseconds() == 2_500_000_000
    assert build_init("assistant", ttl=7).ttl.seconds == 7
    plain = build_init("assistant")
    assert not plain.labels and not plain.HasField("ttl")
    with pytest.raises(TypeError):
        build_init("assistant", ttl="30m")
    with pytest.raises(TypeError):
        build_init("assistant", ttl=True)


def test_run_call_carries_labels_and_ttl():
    call = calls.run_call(
        "assistant", "hi", session_id=None, snapshot_id=None, state=None, detach=False,
        metadata=None, labels={"a": "b"}, ttl=datetime.timedelta(seconds=90),
    )
    assert dict(call.request.init.labels) == {"a": "b"} and call.request.init.ttl.seconds == 90


@pytest.fixture
def local_time_not_utc(monkeypatch: pytest.MonkeyPatch):
    """Local time is UTC+5:30 for the test (a POSIX TZ string: no tz database needed)."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is Unix-only")
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_list_sessions_request_takes_filters_and_local_or_aware_times(local_time_not_utc):
    assert datetime.datetime.now().astimezone().utcoffset() == datetime.timedelta(hours=5, minutes=30)
    aware = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    request = calls.list_sessions_request("tasks", labels={"k": "v"}, updated_after=aware, page_size=7)
    assert (request.agent, dict(request.labels), request.page_size) == ("tasks", {"k": "v"}, 7)
    assert request.updated_after.ToDatetime(tzinfo=datetime.timezone.utc) == aware
    naive_local = aware.astimezone().replace(tzinfo=None)
    assert calls.list_sessions_request(updated_after=naive_local).updated_after == request.updated_after
    assert calls.list_sessions_request(updated_after=aware.timestamp()).updated_after == request.updated_after
    empty = calls.list_sessions_request()
    assert empty == agent_service_pb2.ListSessionsRequest()


def test_update_and_delete_session_calls():
    call = calls.update_session_call(
        "s1", set_labels={"a": "1"}, remove_labels=["b"], ttl=datetime.timedelta(hours=1)
    )
    assert call.method == "UpdateSession"
    assert dict(call.request.set_labels) == {"a": "1"} and list(call.request.remove_labels) == ["b"]
    assert call.request.ttl.seconds == 3600 and not call.request.clear_ttl
    cleared = calls.update_session_call("s1", clear_ttl=True).request
    assert cleared.clear_ttl and not cleared.HasField("ttl")
    with pytest.raises(TypeError):
        calls.update_session_call("s1", remove_labels="b")
    delete = calls.delete_session_call("s1")
    assert delete.method == "DeleteSession"
    assert delete.shape(agent_service_pb2.DeleteSessionResponse(deleted=True)) is True
    assert delete.shape(agent_service_pb2.DeleteSessionResponse()) is False


# --- Over the wire ---


def test_sessions_are_listed_by_label_and_deleted_once(client: AgentClient):
    suite = suite_label()
    colors = ["red", "red", "blue"]
    outputs = [client.run("assistant", "hello", labels={"suite": suite, "color": c}) for c in colors]
    ids = [o.session_id for o in outputs]

    listed = list(client.list_sessions(labels={"suite": suite}))
    assert sorted(s.session_id for s in listed) == sorted(ids)
    for session in listed:
        i = ids.index(session.session_id)
        assert session.agent == "assistant"
        assert dict(session.labels) == {"suite": suite, "color": colors[i]}
        assert session.turn_count == 1 and session.head_snapshot_id == outputs[i].snapshot_id
        assert session.head_status == state_pb2.SNAPSHOT_STATUS_COMPLETED
        assert session.HasField("created_at") and session.HasField("updated_at")
        assert not session.HasField("expires_at") and not session.HasField("ttl")

    # Exact match on each given label.
    assert sorted(listed_ids(client, labels={"suite": suite, "color": "red"})) == sorted(ids[:2])
    assert listed_ids(client, labels={"suite": suite, "color": "re"}) == []

    assert client.delete_session(ids[0]) is True
    assert client.delete_session(ids[0]) is False

    with pytest.raises(NotFoundError) as info:
        client.get_session(ids[0])
    assert info.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(NotFoundError):
        client.get_snapshot("assistant", session_id=ids[0])
    with pytest.raises(NotFoundError):
        client.get_snapshot("assistant", outputs[0].snapshot_id)
    with pytest.raises(NotFoundError):
        client.run("assistant", "again", session_id=ids[0])

    # The rest are intact.
    assert sorted(listed_ids(client, labels={"suite": suite})) == sorted(ids[1:])
    for i in (1, 2):
        session = client.get_session(ids[i])
        assert session.head_snapshot_id == outputs[i].snapshot_id and session.labels["color"] == colors[i]
        assert client.run_text("assistant", "still here", session_id=ids[i]) == "echo: still here"

    assert client.delete_session("no-such-session") is False
    with pytest.raises(NotFoundError):
        client.get_session("no-such-session")


def test_chat_creates_a_labelled_session(client: AgentClient):
    suite = suite_label()
    with client.chat("tasks", labels={"suite": suite}) as conversation:
        conversation.send("first").wait()
        conversation.send("second").wait()
    (session,) = client.list_sessions(labels={"suite": suite})
    assert session.session_id == conversation.session_id
    assert session.agent == "tasks" and session.turn_count == 2


def test_update_session_sets_and_removes_labels(client: AgentClient):
    suite = suite_label()
    session_id = new_session(client, labels={"suite": suite, "stage": "draft", "owner": "ann"}).session_id

    updated = client.update_session(session_id, set_labels={"stage": "final", "topic": "billing"}, remove_labels=["owner"])
    want: Dict[str, str] = {"suite": suite, "stage": "final", "topic": "billing"}
    assert dict(updated.labels) == want
    assert dict(client.get_session(session_id).labels) == want
    assert listed_ids(client, labels={"suite": suite, "stage": "final"}) == [session_id]
    assert listed_ids(client, labels={"suite": suite, "stage": "draft"}) == []
    assert listed_ids(client, labels={"suite": suite, "owner": "ann"}) == []

    with pytest.raises(InvalidArgumentError):
        client.update_session(session_id, set_labels={"Bad Key": "x"})
    with pytest.raises(NotFoundError):
        client.update_session("no-such-session", set_labels={"a": "b"})


def test_list_sessions_with_page_size_2_returns_every_session_once(client: AgentClient):
    suite = suite_label()
    ids = [new_session(client, labels={"suite": suite}).session_id for _ in range(5)]

    first = client.list_sessions_page(labels={"suite": suite}, page_size=2)
    assert len(first.sessions) == 2 and first.next_page_token

    listed = list(client.list_sessions(labels={"suite": suite}, page_size=2))
    got = [s.session_id for s in listed]
    assert len(got) == 5 and sorted(got) == sorted(ids)
    assert got == list(reversed(ids))  # newest-updated first
    updated = [s.updated_at.ToNanoseconds() for s in listed]
    assert updated == sorted(updated, reverse=True)

    with pytest.raises(InvalidArgumentError):
        list(client.list_sessions(page_size=-1))


def test_list_sessions_filters_by_agent_and_updated_after(client: AgentClient):
    labels = {"suite": suite_label()}
    older = new_session(client, labels=labels).session_id
    tasks = new_session(client, "tasks", labels=labels).session_id
    time.sleep(0.05)
    cut = datetime.datetime.now()  # naive: local time
    time.sleep(0.05)
    newer = new_session(client, labels=labels).session_id

    assert sorted(listed_ids(client, labels=labels)) == sorted([older, tasks, newer])
    assert sorted(listed_ids(client, agent="assistant", labels=labels)) == sorted([older, newer])
    assert listed_ids(client, agent="tasks", labels=labels) == [tasks]
    assert listed_ids(client, labels=labels, updated_after=cut) == [newer]
    assert listed_ids(client, labels=labels, updated_after=cut.timestamp()) == [newer]


def test_server_session_ttl_expires_a_session_2s_after_its_last_turn(session_ttl_address: str):
    # Timed by the expiries the server reports, never by how fast a loaded machine answers: a read
    # that lands after the session's own expiry proves nothing and is not held against it.
    labels = {"suite": suite_label()}
    with AgentClient(session_ttl_address, timeout=30) as client:
        conversation = client.chat("assistant", labels=labels)
        conversation.send("one").wait()
        first_expiry = client.get_session(conversation.session_id).expires_at.ToNanoseconds() / 1e9
        time.sleep(0.5)
        last = conversation.send("two")
        last.wait()
        session_id = conversation.output().session_id

        session = client.get_session(session_id)
        assert session.ttl.ToTimedelta() == datetime.timedelta(seconds=2)
        assert session.expires_at.ToNanoseconds() - session.updated_at.ToNanoseconds() == 2_000_000_000
        expiry = session.expires_at.ToNanoseconds() / 1e9
        assert expiry > first_expiry

        # Past the first turn's expiry the session is still there: idle time counts from the last update.
        time.sleep(max(0.0, first_expiry + 0.1 - time.time()))
        try:
            assert client.get_session(session_id).session_id == session_id
        except NotFoundError:
            assert time.time() >= expiry, "the session was gone before its expires_at"

        time.sleep(max(0.0, expiry + 1.0 - time.time()))
        with pytest.raises(NotFoundError):
            client.get_session(session_id)
        with pytest.raises(NotFoundError):
            client.get_snapshot("assistant", session_id=session_id)
        with pytest.raises(NotFoundError):
            client.get_snapshot("assistant", last.snapshot_id)
        with pytest.raises(NotFoundError):
            client.run("assistant", "late", session_id=session_id)
        assert listed_ids(client, labels=labels) == []
        assert client.delete_session(session_id) is False


def test_ttl_from_run_and_update_session(client: AgentClient):
    labels = {"suite": suite_label()}
    expiring = new_session(client, labels=labels, ttl=datetime.timedelta(seconds=2))
    cleared = new_session(client, labels=labels, ttl=2)
    extended = new_session(client, labels=labels)
    start = time.monotonic()
    assert expiring.ttl.ToTimedelta() == datetime.timedelta(seconds=2) and expiring.HasField("expires_at")
    assert not extended.HasField("ttl") and not extended.HasField("expires_at")

    after_clear = client.update_session(cleared.session_id, clear_ttl=True)
    assert not after_clear.HasField("ttl") and not after_clear.HasField("expires_at")
    after_ttl = client.update_session(extended.session_id, ttl=datetime.timedelta(hours=1))
    assert after_ttl.ttl.seconds == 3600
    assert after_ttl.expires_at.ToSeconds() >= time.time() + 3540
    with pytest.raises(InvalidArgumentError):
        client.update_session(extended.session_id, ttl=60, clear_ttl=True)

    time.sleep(max(0.0, start + 3.0 - time.monotonic()))
    with pytest.raises(NotFoundError):
        client.get_session(expiring.session_id)
    assert sorted(listed_ids(client, labels=labels)) == sorted([cleared.session_id, extended.session_id])


def test_another_tenant_cannot_list_read_update_or_delete_sessions(auth_address: str):
    labels = {"suite": suite_label()}
    with AgentClient(auth_address, token=TOKEN_ALICE, timeout=30) as alice, AgentClient(
        auth_address, token=TOKEN_BOB, timeout=30
    ) as bob:
        session_id = new_session(alice, labels=labels).session_id
        assert listed_ids(bob, labels=labels) == []
        with pytest.raises(NotFoundError):
            bob.get_session(session_id)
        with pytest.raises(NotFoundError):
            bob.update_session(session_id, set_labels={"owner": "bob"})
        assert bob.delete_session(session_id) is False
        assert dict(alice.get_session(session_id).labels) == labels
        assert listed_ids(alice, labels=labels) == [session_id]


def test_delete_session_during_detached_work_aborts_it_then_removes_it(client: AgentClient):
    conversation = client.chat("assistant")
    conversation.send("never finishes", metadata={"echoDelayMs": 5000})
    pending = conversation.detach()
    watch = client.watch_snapshot("assistant", pending.snapshot_id, timeout=30)
    assert next(watch).status == state_pb2.SNAPSHOT_STATUS_PENDING

    start = time.monotonic()
    assert client.delete_session(pending.session_id) is True
    rest = [update.status for update in watch]
    assert rest and rest[-1] == state_pb2.SNAPSHOT_STATUS_ABORTED
    assert time.monotonic() - start < 3  # the 5 s turn was aborted, not awaited
    with pytest.raises(NotFoundError):
        client.get_snapshot("assistant", pending.snapshot_id)
    with pytest.raises(NotFoundError):
        client.get_session(pending.session_id)


# --- The asyncio client ---


def test_async_session_lifecycle(agentd_address: str):
    suite = suite_label()

    async def scenario():
        async with AsyncAgentClient(agentd_address, timeout=30) as client:
            ids = []
            for color in ("red", "red", "blue"):
                output = await client.run("assistant", "hello", labels={"suite": suite, "color": color})
                ids.append(output.session_id)
            async with client.chat("assistant", labels={"suite": suite, "color": "green"}, ttl=3600) as conversation:
                await (await conversation.send("hi")).wait()
            ids.append(conversation.session_id)

            every = [s async for s in client.list_sessions(labels={"suite": suite}, page_size=2)]
            red = [s.session_id async for s in client.list_sessions(labels={"suite": suite, "color": "red"})]
            first_page = await client.list_sessions_page(labels={"suite": suite}, page_size=2)
            green = await client.get_session(ids[3])

            updated = await client.update_session(ids[2], set_labels={"color": "red"}, remove_labels=["suite"])
            deleted = (await client.delete_session(ids[0]), await client.delete_session(ids[0]))
            with pytest.raises(NotFoundError):
                await client.get_session(ids[0])
            rest = [s.session_id async for s in client.list_sessions(labels={"suite": suite})]
            intact = await client.get_session(ids[1])
            return ids, every, red, first_page, green, updated, deleted, rest, intact

    ids, every, red, first_page, green, updated, deleted, rest, intact = asyncio.run(scenario())
    assert [s.session_id for s in every] == list(reversed(ids))
    assert sorted(red) == sorted(ids[:2])
    assert len(first_page.sessions) == 2 and first_page.next_page_token
    assert dict(green.labels) == {"suite": suite, "color": "green"} and green.ttl.seconds == 3600
    assert dict(updated.labels) == {"color": "red"}
    assert deleted == (True, False)
    assert sorted(rest) == sorted([ids[1], ids[3]])
    assert intact.session_id == ids[1] and intact.turn_count == 1
