"""OpenTelemetry: with opentelemetry-instrumentation-grpc's client interceptor (passed as
``interceptors=``, or installed globally with ``GrpcInstrumentorClient``) every call carries
the W3C ``traceparent`` of the caller's active span. Checked on the wire with an in-process
grpcio server that records each call's metadata, and against agentd for the calls still
working through the interceptor."""

import asyncio
import re
import threading
from concurrent import futures
from typing import Dict, Iterator, List, Tuple

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import GrpcInstrumentorClient, aio_client_interceptors, client_interceptor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentd.v1 import agent_service_pb2, agent_service_pb2_grpc, state_pb2
from agentd_client import AgentClient, UnimplementedError
from agentd_client.aio import AsyncAgentClient

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class MetadataRecorder(grpc.ServerInterceptor):
    """Records the ``traceparent`` metadata of every call, by method name ("" when absent)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Dict[str, List[str]] = {}

    def intercept_service(self, continuation, handler_call_details):
        method = handler_call_details.method.rsplit("/", 1)[-1]
        value = next((v for k, v in handler_call_details.invocation_metadata if k == "traceparent"), "")
        with self._lock:
            self.calls.setdefault(method, []).append(value)
        return continuation(handler_call_details)

    def traceparents(self, method: str) -> List[str]:
        with self._lock:
            return list(self.calls.get(method, []))


class WatchUntilCancelled(agent_service_pb2_grpc.AgentServiceServicer):
    """WatchSnapshot sends PENDING, then waits until the client cancels (``cancelled`` is set);
    Chat reads the first input before answering UNIMPLEMENTED (answering while that input is
    still in flight can reset the stream, which the client reports as INTERNAL); every other
    method is unimplemented."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def Chat(self, request_iterator, context):
        next(request_iterator, None)
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")

    def WatchSnapshot(self, request, context):
        context.add_callback(self.cancelled.set)
        yield agent_service_pb2.WatchSnapshotResponse(
            snapshot_id=request.snapshot_id, status=state_pb2.SNAPSHOT_STATUS_PENDING
        )
        self.cancelled.wait(10)


@pytest.fixture
def recording_server() -> Iterator[Tuple[str, MetadataRecorder, WatchUntilCancelled]]:
    """``(address, recorder, servicer)`` of a plaintext grpcio server."""
    recorder = MetadataRecorder()
    servicer = WatchUntilCancelled()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[recorder])
    agent_service_pb2_grpc.add_AgentServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder, servicer
    finally:
        server.stop(None)


@pytest.fixture
def tracing() -> Iterator[Tuple[TracerProvider, InMemorySpanExporter]]:
    """A tracer provider of its own (not the global one) and the spans it ended."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@pytest.fixture(scope="module")
def global_spans() -> InMemorySpanExporter:
    """The spans of the global tracer provider, which this sets once for the process (only
    ``GrpcInstrumentorClient`` needs it: it always uses the global provider)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.fail("another global tracer provider is already set: this test must own the global one")
    return exporter


def rpc_span(exporter: InMemorySpanExporter, method: str) -> ReadableSpan:
    """The one ended client span of ``method`` (e.g. "Run")."""
    spans = [
        s
        for s in exporter.get_finished_spans()
        if s.kind == trace.SpanKind.CLIENT and s.name == f"/agentd.v1.AgentService/{method}"
    ]
    assert len(spans) == 1, [s.name for s in exporter.get_finished_spans()]
    return spans[0]


def assert_propagated(traceparent: str, caller: trace.Span, span: ReadableSpan) -> None:
    """``traceparent`` is a sampled one of the caller's trace, naming ``span`` (a child of the
    caller's span) as the parent."""
    match = TRACEPARENT.match(traceparent)
    assert match, f"traceparent {traceparent!r}"
    trace_id, parent_id, flags = match.groups()
    assert trace_id == trace.format_trace_id(caller.get_span_context().trace_id)
    assert parent_id == trace.format_span_id(span.context.span_id)
    assert int(flags, 16) & 1, f"traceparent {traceparent!r} is not sampled"
    assert span.context.trace_id == caller.get_span_context().trace_id
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id


def test_client_interceptor_sends_the_active_spans_traceparent_with_every_kind_of_call(recording_server, tracing):
    address, recorder, _ = recording_server
    provider, exporter = tracing
    with AgentClient(address, interceptors=[client_interceptor(tracer_provider=provider)], timeout=10) as client:
        with provider.get_tracer("caller").start_as_current_span("caller") as caller:
            with pytest.raises(UnimplementedError):
                client.run_text("assistant", "hello traced")
            conversation = client.chat("assistant", timeout=10)
            with pytest.raises(UnimplementedError):
                conversation.send("hello traced").wait()
            conversation.close()
            with pytest.raises(UnimplementedError):
                client.list_agents()
    for method in ("Run", "Chat", "ListAgents"):
        [traceparent] = recorder.traceparents(method)
        assert_propagated(traceparent, caller, rpc_span(exporter, method))


def test_watch_snapshot_through_the_interceptor_is_traced_and_cancelled_when_left_early(recording_server, tracing):
    address, recorder, servicer = recording_server
    provider, exporter = tracing
    with AgentClient(address, interceptors=[client_interceptor(tracer_provider=provider)]) as client:
        with provider.get_tracer("caller").start_as_current_span("caller") as caller:
            for update in client.watch_snapshot("assistant", "snap-1", timeout=10):
                assert update.status == state_pb2.SNAPSHOT_STATUS_PENDING
                break
        assert servicer.cancelled.wait(5), "leaving the loop did not cancel the call"
    [traceparent] = recorder.traceparents("WatchSnapshot")
    assert_propagated(traceparent, caller, rpc_span(exporter, "WatchSnapshot"))


def test_async_client_with_aio_client_interceptors_sends_the_traceparent(recording_server, tracing):
    address, recorder, _ = recording_server
    provider, exporter = tracing

    async def scenario() -> trace.Span:
        interceptors = aio_client_interceptors(tracer_provider=provider)
        async with AsyncAgentClient(address, interceptors=interceptors, timeout=10) as client:
            with provider.get_tracer("caller").start_as_current_span("caller") as caller:
                with pytest.raises(UnimplementedError):
                    await client.run_text("assistant", "hello traced")
                conversation = client.chat("assistant", timeout=10)
                with pytest.raises(UnimplementedError):
                    await (await conversation.send("hello traced")).wait()
                conversation.close()
        return caller

    caller = asyncio.run(scenario())
    for method in ("Run", "Chat"):
        [traceparent] = recorder.traceparents(method)
        assert_propagated(traceparent, caller, rpc_span(exporter, method))


def test_global_grpc_instrumentation_covers_the_channel_the_client_opens(recording_server, global_spans):
    address, recorder, _ = recording_server
    instrumentor = GrpcInstrumentorClient()
    instrumentor.instrument()
    try:
        with AgentClient(address, timeout=10) as client:
            with trace.get_tracer("caller").start_as_current_span("caller") as caller:
                with pytest.raises(UnimplementedError):
                    client.run_text("assistant", "hello traced")
    finally:
        instrumentor.uninstrument()
    [traceparent] = recorder.traceparents("Run")
    assert_propagated(traceparent, caller, rpc_span(global_spans, "Run"))


def test_without_instrumentation_no_traceparent_is_sent(recording_server, tracing):
    address, recorder, _ = recording_server
    provider, _ = tracing
    with AgentClient(address, timeout=10) as client:
        with provider.get_tracer("caller").start_as_current_span("caller"):
            with pytest.raises(UnimplementedError):
                client.run_text("assistant", "hello")
    assert recorder.traceparents("Run") == [""]


def test_interceptors_are_checked():
    with pytest.raises(ValueError, match="not a grpc client interceptor"):
        AgentClient("127.0.0.1:1", interceptors=[object()])

    async def adopted_aio_channel() -> None:
        channel = grpc.aio.insecure_channel("127.0.0.1:1")
        try:
            with pytest.raises(ValueError, match="takes its interceptors when it is created"):
                AsyncAgentClient(channel=channel, interceptors=aio_client_interceptors())
        finally:
            await channel.close()

    asyncio.run(adopted_aio_channel())


def test_traced_calls_keep_working_against_agentd(agentd_address, tracing):
    provider, exporter = tracing
    with AgentClient(agentd_address, interceptors=[client_interceptor(tracer_provider=provider)], timeout=30) as client:
        with provider.get_tracer("caller").start_as_current_span("caller") as caller:
            assert client.run_text("assistant", "hello traced") == "echo: hello traced"
            with client.chat("assistant") as conversation:
                for text in ("one", "two"):
                    turn = conversation.send(text)
                    turn.wait()
                    assert turn.text == f"echo: {text}"
            job = client.chat("assistant")
            job.send("in the background", metadata={"echoDelayMs": 50})
            pending = job.detach()
            assert client.wait_snapshot("assistant", pending.snapshot_id, timeout=30) == (
                state_pb2.SNAPSHOT_STATUS_COMPLETED
            )
    caller_id = caller.get_span_context().span_id
    methods = [s.name for s in exporter.get_finished_spans() if s.parent is not None and s.parent.span_id == caller_id]
    assert sorted(methods) == sorted(
        f"/agentd.v1.AgentService/{m}" for m in ("Run", "Chat", "Chat", "WatchSnapshot")
    )
    assert all(s.status.is_ok for s in exporter.get_finished_spans())


def test_traced_async_calls_keep_working_against_agentd(agentd_address, tracing):
    provider, exporter = tracing

    async def scenario() -> None:
        interceptors = aio_client_interceptors(tracer_provider=provider)
        async with AsyncAgentClient(agentd_address, interceptors=interceptors, timeout=30) as client:
            with provider.get_tracer("caller").start_as_current_span("caller"):
                assert await client.run_text("assistant", "hello traced") == "echo: hello traced"
                conversation = client.chat("assistant")
                turn = await conversation.send("one")
                await turn.wait()
                assert turn.text == "echo: one"
                await conversation.output()

    asyncio.run(scenario())
    names = sorted(s.name for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.CLIENT)
    assert names == ["/agentd.v1.AgentService/Chat", "/agentd.v1.AgentService/Run"]
