"""Busy sessions: a call on a session another invocation holds rejects, waits or interrupts
according to its ``busy_policy``."""

import asyncio
import concurrent.futures
import time
from typing import Any, Callable, List, Tuple

import grpc
import grpc.aio
import pytest

from agentd.v1 import agent_pb2, agent_service_pb2
from agentd_client import (
    AbortedError,
    AgentClient,
    Conversation,
    DeadlineExceededError,
    message_text,
)
from agentd_client.aio import AsyncAgentClient


def hold_session(client: AgentClient) -> Conversation:
    """A conversation with one finished turn ("held") whose stream stays open, so its fresh
    session stays busy until the conversation ends."""
    holder = client.chat("assistant")
    holder.send("held").wait()
    assert holder.session_id
    return holder


def history(client: AgentClient, session_id: str) -> Tuple[str, List[str]]:
    """The latest snapshot's ID and message texts of a session."""
    snapshot = client.get_snapshot("assistant", session_id=session_id)
    return snapshot.snapshot_id, [message_text(m) for m in snapshot.state.messages]


class _RecordBusyPolicies(grpc.UnaryUnaryClientInterceptor):
    """Records the busy policy of every Run request sent through the channel."""

    def __init__(self) -> None:
        self.sent: List[int] = []

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        if isinstance(request, agent_service_pb2.RunRequest):
            self.sent.append(request.init.busy_policy)
        return continuation(details, request)


def test_reject_fails_a_run_on_a_session_an_open_chat_holds(client: AgentClient, agentd_address: str):
    holder = hold_session(client)
    recorder = _RecordBusyPolicies()
    channel = grpc.intercept_channel(grpc.insecure_channel(agentd_address), recorder)
    try:
        with AgentClient(channel=channel, timeout=30) as other:
            with pytest.raises(AbortedError) as info:
                other.run("assistant", "intruder", session_id=holder.session_id, busy_policy="reject")
    finally:
        channel.close()
    assert info.value.code == grpc.StatusCode.ABORTED and "busy" in info.value.details
    # REJECT is the server's default too: check the policy went on the wire.
    assert recorder.sent == [agent_pb2.BUSY_POLICY_REJECT]

    assert holder.send("still mine").wait() is not None  # the holder is unaffected
    holder.output()
    assert "intruder" not in history(client, holder.session_id)[1]


def test_enqueue_waits_for_the_chat_and_continues_its_history(client: AgentClient):
    holder = hold_session(client)
    session_id = holder.session_id
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        queued = pool.submit(
            client.run, "assistant", "queued", session_id=session_id, busy_policy="enqueue"
        )
        time.sleep(0.5)
        assert not queued.done(), f"the ENQUEUE run returned while the chat held the session: {queued.result()}"
        holder.send("meanwhile").wait()  # taken while the run waits: part of what it continues
        holder.output()
        output = queued.result(timeout=20)
    assert message_text(output.message) == "echo: queued" and output.session_id == session_id
    latest, texts = history(client, session_id)
    assert texts == ["held", "echo: held", "meanwhile", "echo: meanwhile", "queued", "echo: queued"]
    assert latest == output.snapshot_id


def test_enqueue_is_bounded_by_the_call_deadline(client: AgentClient):
    holder = hold_session(client)
    with pytest.raises(DeadlineExceededError):
        client.run_text(
            "assistant", "too late", session_id=holder.session_id, busy_policy="enqueue", timeout=0.7
        )
    holder.output()


def test_interrupt_ends_the_holders_chat_with_aborted_and_runs(client: AgentClient):
    holder = hold_session(client)
    session_id = holder.session_id
    reply = client.run_text(
        "assistant", "takeover", session_id=session_id, busy_policy=agent_pb2.BUSY_POLICY_INTERRUPT
    )
    assert reply == "echo: takeover"
    with pytest.raises(AbortedError) as info:
        holder.output()
    assert info.value.code == grpc.StatusCode.ABORTED
    assert history(client, session_id)[1] == ["held", "echo: held", "takeover", "echo: takeover"]


def test_chat_takes_a_busy_policy_too(client: AgentClient):
    holder = hold_session(client)
    with client.chat("assistant", session_id=holder.session_id, busy_policy="interrupt") as taker:
        assert taker.send("mine now").wait().turn_index == 1
    with pytest.raises(AbortedError):
        holder.output()


def test_an_unknown_busy_policy_raises_value_error_before_calling(client: AgentClient):
    with pytest.raises(ValueError, match="busy_policy"):
        client.run_text("assistant", "hi", busy_policy="wait")
    with pytest.raises(ValueError, match="busy_policy"):
        client.chat("assistant", busy_policy="later")


class _AsyncRecordBusyPolicies(grpc.aio.UnaryUnaryClientInterceptor):
    """Records the busy policy of every Run request sent through an aio channel."""

    def __init__(self) -> None:
        self.sent: List[int] = []

    async def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        if isinstance(request, agent_service_pb2.RunRequest):
            self.sent.append(request.init.busy_policy)
        return await continuation(details, request)


def test_async_reject_fails_a_run_on_a_session_an_open_chat_holds(agentd_address: str):
    recorder = _AsyncRecordBusyPolicies()

    async def scenario():
        channel = grpc.aio.insecure_channel(agentd_address, interceptors=[recorder])
        async with AsyncAgentClient(channel=channel, timeout=30) as client:
            holder = client.chat("assistant")
            await (await holder.send("held")).wait()
            try:
                with pytest.raises(AbortedError) as info:
                    await client.run_text(
                        "assistant", "intruder", session_id=holder.session_id, busy_policy="reject"
                    )
                await (await holder.send("still mine")).wait()
            finally:
                output = await holder.output()
            snapshot = await client.get_snapshot("assistant", session_id=holder.session_id)
        await channel.close()
        return info.value, output, [message_text(m) for m in snapshot.state.messages]

    error, output, texts = asyncio.run(scenario())
    assert error.code == grpc.StatusCode.ABORTED and "busy" in error.details
    assert recorder.sent == [agent_pb2.BUSY_POLICY_REJECT]  # the server's default: check the wire
    assert message_text(output.message) == "echo: still mine"
    assert texts == ["held", "echo: held", "still mine", "echo: still mine"]


def test_async_interrupting_chat_ends_the_holder_with_aborted(agentd_address: str):
    async def scenario():
        async with AsyncAgentClient(agentd_address, timeout=30) as client:
            holder = client.chat("assistant")
            await (await holder.send("held")).wait()
            async with client.chat(
                "assistant", session_id=holder.session_id, busy_policy="interrupt"
            ) as taker:
                turn = await taker.send("mine now")
                await turn.wait()
            with pytest.raises(AbortedError) as info:
                await holder.output()
            return turn, info.value

    turn, error = asyncio.run(scenario())
    assert turn.text == "echo: mine now" and turn.turn_index == 1
    assert error.code == grpc.StatusCode.ABORTED
