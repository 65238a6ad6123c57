"""What the clients put on the wire for ``token=`` and ``tls=``, checked with an in-process
grpcio server over TLS whose AgentService methods are all unimplemented: it records each
call's metadata, so these tests need no agentd."""

import asyncio
import threading
from concurrent import futures
from typing import Dict, Iterator, List, Tuple

import grpc
import pytest

from agentd.v1 import agent_service_pb2_grpc
from agentd_client import AgentClient, TLSConfig, UnimplementedError
from agentd_client.aio import AsyncAgentClient
from conftest import PkiFiles


class MetadataRecorder(grpc.ServerInterceptor):
    """Records the invocation metadata of every call, by method name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Dict[str, List[Tuple[Tuple[str, str], ...]]] = {}

    def intercept_service(self, continuation, handler_call_details):
        method = handler_call_details.method.rsplit("/", 1)[-1]
        with self._lock:
            self.calls.setdefault(method, []).append(tuple(handler_call_details.invocation_metadata))
        return continuation(handler_call_details)

    def authorization(self, method: str) -> List[str]:
        """The authorization values of each recorded call of ``method``."""
        with self._lock:
            calls = list(self.calls.get(method, []))
        return [next((v for k, v in md if k == "authorization"), "") for md in calls]


@pytest.fixture
def recorder(pki: PkiFiles) -> Iterator[Tuple[str, MetadataRecorder]]:
    """``(address, recorder)`` of a TLS grpcio server with the test server certificate."""
    recorder = MetadataRecorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[recorder])
    agent_service_pb2_grpc.add_AgentServiceServicer_to_server(agent_service_pb2_grpc.AgentServiceServicer(), server)
    credentials = grpc.ssl_server_credentials([(pki.server_key.read_bytes(), pki.server_cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder
    finally:
        server.stop(None)


def test_the_token_is_sent_with_unary_server_streaming_and_bidi_calls(recorder, pki: PkiFiles):
    address, rec = recorder
    with AgentClient(address, token="tok-wire-1", tls=TLSConfig(ca=pki.ca), timeout=10) as client:
        with pytest.raises(UnimplementedError):
            client.run_text("assistant", "hi")
        with pytest.raises(UnimplementedError):
            list(client.watch_snapshot("assistant", "s", timeout=10))
        conversation = client.chat("assistant", timeout=10)
        with pytest.raises(UnimplementedError):
            conversation.send("hi").wait()
    for method in ("Run", "WatchSnapshot", "Chat"):
        assert rec.authorization(method) == ["Bearer tok-wire-1"], method


def test_a_token_function_is_asked_per_call_and_other_metadata_is_kept(recorder, pki: PkiFiles):
    address, rec = recorder
    tokens = iter(["tok-a", "tok-b"])
    with AgentClient(
        address, token=lambda: next(tokens), tls=TLSConfig(ca=pki.ca), metadata=[("x-request-id", "r1")], timeout=10
    ) as client:
        for _ in range(2):
            with pytest.raises(UnimplementedError):
                client.list_agents()
    assert rec.authorization("ListAgents") == ["Bearer tok-a", "Bearer tok-b"]
    assert all(("x-request-id", "r1") in md for md in rec.calls["ListAgents"])


def test_no_token_sends_no_authorization(recorder, pki: PkiFiles):
    address, rec = recorder
    with AgentClient(address, tls=TLSConfig(ca=pki.ca), timeout=10) as client:
        with pytest.raises(UnimplementedError):
            client.list_agents()
    assert rec.authorization("ListAgents") == [""]


def test_the_async_client_sends_the_token_with_every_call(recorder, pki: PkiFiles):
    address, rec = recorder

    async def scenario():
        async with AsyncAgentClient(address, token="tok-wire-2", tls=TLSConfig(ca=pki.ca.read_bytes()), timeout=10) as client:
            with pytest.raises(UnimplementedError):
                await client.run_text("assistant", "hi")
            with pytest.raises(UnimplementedError):
                async for _ in client.watch_snapshot("assistant", "s", timeout=10):
                    pass
            conversation = client.chat("assistant", timeout=10)
            with pytest.raises(UnimplementedError):
                await (await conversation.send("hi")).wait()

    asyncio.run(scenario())
    for method in ("Run", "WatchSnapshot", "Chat"):
        assert rec.authorization(method) == ["Bearer tok-wire-2"], method
