"""Chaos over the wire: 8 conversations x 25 turns on one client through a proxy that resets the
connection every few KB, against a real agentd. Prints the resets, retries and p50/p99 turn
times (run with ``-s`` to see them)."""

from __future__ import annotations

import asyncio
import os
from typing import Iterator

import pytest

from agentd_client import AgentClient
from agentd_client.aio import AsyncAgentClient
from chaos_run import history_problems, run_async, run_sync
from fault_proxy import FaultProxy

CONVERSATIONS = 8
TURNS = 25
#: Reset every connection after 4-12 KB of traffic (8 KB +-50%). A turn of this workload is
#: about 440 bytes on the wire, and grpcio carries all 8 conversations on one HTTP/2
#: connection: each reset breaks all 8 streams, and their reconnect (8 new streams, each
#: re-sending its init and the input in flight, and the re-run turn) alone is about 5 KB.
#: ``AGENTD_CHAOS_RESET_EVERY`` (bytes) overrides it.
RESET_EVERY = int(os.environ.get("AGENTD_CHAOS_RESET_EVERY", "8192"))
RESETS = f"resets every {RESET_EVERY // 2}-{RESET_EVERY * 3 // 2} B"


@pytest.fixture
def resetting_proxy(agentd_address: str) -> Iterator[FaultProxy]:
    """A proxy to the test agentd resetting each connection after RESET_EVERY +-50% bytes."""
    with FaultProxy(agentd_address, reset_every=RESET_EVERY, seed=35) as proxy:
        yield proxy


def test_sync_conversations_through_resets_fail_no_call_and_store_every_input_once(
    resetting_proxy: FaultProxy, client: AgentClient
):
    with AgentClient(resetting_proxy.address, timeout=60) as chaotic:
        result = run_sync(chaotic, CONVERSATIONS, TURNS, "sync-chaos")
        print("\n" + result.summary(f"sync, {RESETS}", resetting_proxy.resets, chaotic.stats.retries))
    assert result.errors == [] and result.misdelivered == []
    assert resetting_proxy.resets >= 5
    assert history_problems(client, result) == []


def test_sync_conversations_without_resets_make_no_retry(client: AgentClient):
    result = run_sync(client, CONVERSATIONS, TURNS, "sync-calm")
    print("\n" + result.summary("sync, direct", 0, client.stats.retries))
    assert result.errors == [] and result.misdelivered == [] and client.stats.retries == 0
    assert history_problems(client, result) == []


def test_async_conversations_through_resets_fail_no_call_and_store_every_input_once(
    resetting_proxy: FaultProxy, client: AgentClient
):
    async def main() -> tuple:
        async with AsyncAgentClient(resetting_proxy.address, timeout=60) as chaotic:
            result = await run_async(chaotic, CONVERSATIONS, TURNS, "async-chaos")
            return result, chaotic.stats.retries

    result, retries = asyncio.run(main())
    print("\n" + result.summary(f"asyncio, {RESETS}", resetting_proxy.resets, retries))
    assert result.errors == [] and result.misdelivered == []
    assert resetting_proxy.resets >= 5
    assert history_problems(client, result) == []


def test_async_conversations_without_resets_make_no_retry(agentd_address: str, client: AgentClient):
    async def main() -> tuple:
        async with AsyncAgentClient(agentd_address, timeout=60) as calm:
            return await run_async(calm, CONVERSATIONS, TURNS, "async-calm"), calm.stats.retries

    result, retries = asyncio.run(main())
    print("\n" + result.summary("asyncio, direct", 0, retries))
    assert result.errors == [] and result.misdelivered == [] and retries == 0
    assert history_problems(client, result) == []
