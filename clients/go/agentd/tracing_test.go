package agentd_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	"github.com/agentd-dev/agentd/gen/go/agentd/v1/agentdv1connect"
)

// traceparentPattern is a W3C traceparent: version, trace ID, parent span ID, flags.
var traceparentPattern = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$`)

// headerServer is an h2c server whose AgentService methods are all
// unimplemented; it records the traceparent header of every call, by procedure.
type headerServer struct {
	url string
	mu  sync.Mutex
	got map[string][]string
}

func newHeaderServer(t *testing.T) *headerServer {
	t.Helper()
	s := &headerServer{got: map[string][]string{}}
	path, handler := agentdv1connect.NewAgentServiceHandler(agentdv1connect.UnimplementedAgentServiceHandler{})
	mux := http.NewServeMux()
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], r.Header.Get("traceparent"))
		s.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true) // what agentd.NewClient speaks to http:// URLs
	srv.Start()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// traceparents returns the traceparent headers received for procedure.
func (s *headerServer) traceparents(procedure string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got[procedure]...)
}

// newTracing returns a tracer provider that records every ended span, and an
// otelconnect interceptor that uses it with the W3C trace-context propagator
// (set explicitly instead of through the otel globals, which tests share).
func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder, connect.Interceptor) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	interceptor, err := otelconnect.NewInterceptor(
		otelconnect.WithTracerProvider(provider),
		otelconnect.WithPropagator(propagation.TraceContext{}),
		otelconnect.WithoutMetrics(),
	)
	if err != nil {
		t.Fatal(err)
	}
	return provider, spans, interceptor
}

// clientSpan returns the one ended client span named name.
func clientSpan(t *testing.T, spans *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == name && s.SpanKind() == trace.SpanKindClient {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ended client spans named %q: %d, want 1 (all ended: %d)", name, len(found), len(spans.Ended()))
	}
	return found[0]
}

// checkPropagated checks that header is a sampled traceparent of caller's
// trace whose parent is rpcSpan, a child of caller.
func checkPropagated(t *testing.T, header string, caller trace.SpanContext, rpcSpan sdktrace.ReadOnlySpan) {
	t.Helper()
	m := traceparentPattern.FindStringSubmatch(header)
	if m == nil {
		t.Fatalf("traceparent = %q, want 00-<trace id>-<span id>-<flags>", header)
	}
	if m[1] != caller.TraceID().String() {
		t.Errorf("traceparent trace ID = %s, want the caller's %s", m[1], caller.TraceID())
	}
	if m[2] != rpcSpan.SpanContext().SpanID().String() {
		t.Errorf("traceparent parent ID = %s, want the client span's %s", m[2], rpcSpan.SpanContext().SpanID())
	}
	if m[3] != "01" {
		t.Errorf("traceparent flags = %s, want 01 (sampled)", m[3])
	}
	if rpcSpan.Parent().SpanID() != caller.SpanID() || rpcSpan.SpanContext().TraceID() != caller.TraceID() {
		t.Errorf("client span's parent = %s/%s, want the caller's span %s/%s",
			rpcSpan.Parent().TraceID(), rpcSpan.Parent().SpanID(), caller.TraceID(), caller.SpanID())
	}
}

func TestOtelconnectInterceptorSendsTraceparentOfTheActiveSpan(t *testing.T) {
	server := newHeaderServer(t)
	provider, spans, interceptor := newTracing(t)
	client := agentd.NewClient(server.url, agentd.WithInterceptors(interceptor))

	ctx, caller := provider.Tracer("caller").Start(testContext(t), "caller")
	_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hello traced")
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("RunText: %v, want the test server's unimplemented", err)
	}
	conv, err := client.Chat(ctx, "assistant", agentd.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if turn, err := conv.SendText(ctx, "hello traced"); err == nil {
		_, err = turn.Wait()
		if connect.CodeOf(err) != connect.CodeUnimplemented {
			t.Fatalf("Chat turn: %v, want the test server's unimplemented", err)
		}
	}
	_ = conv.Close()
	caller.End()

	run := server.traceparents(agentdv1connect.AgentServiceRunProcedure)
	chat := server.traceparents(agentdv1connect.AgentServiceChatProcedure)
	if len(run) != 1 || len(chat) != 1 {
		t.Fatalf("calls received: Run %d, Chat %d; want one each", len(run), len(chat))
	}
	checkPropagated(t, run[0], caller.SpanContext(), clientSpan(t, spans, "agentd.v1.AgentService/Run"))
	checkPropagated(t, chat[0], caller.SpanContext(), clientSpan(t, spans, "agentd.v1.AgentService/Chat"))
}

func TestWithoutAnInterceptorNoTraceparentIsSent(t *testing.T) {
	server := newHeaderServer(t)
	provider, _, _ := newTracing(t)
	ctx, caller := provider.Tracer("caller").Start(testContext(t), "caller")
	defer caller.End()

	_, err := agentd.NewClient(server.url).RunText(ctx, "assistant", agentd.ChatOptions{}, "hello")
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("RunText: %v, want the test server's unimplemented", err)
	}
	if got := server.traceparents(agentdv1connect.AgentServiceRunProcedure); len(got) != 1 || got[0] != "" {
		t.Errorf("traceparent headers = %q, want one call without one", got)
	}
}

func TestOtelconnectInterceptorKeepsRunAndChatWorkingAgainstAgentd(t *testing.T) {
	provider, spans, interceptor := newTracing(t)
	client := newClient(t, agentd.WithInterceptors(interceptor))
	ctx, caller := provider.Tracer("caller").Start(testContext(t), "caller")

	out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hello traced")
	if err != nil {
		t.Fatal(err)
	}
	if got := agentd.Text(out.GetMessage().GetContent()); got != "echo: hello traced" {
		t.Errorf("Run reply = %q, want %q", got, "echo: hello traced")
	}
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{SessionID: out.GetSessionId()})
	if got := runTurn(t, ctx, conv, "and again").Text(); got != "echo: and again" {
		t.Errorf("Chat reply = %q, want %q", got, "echo: and again")
	}
	if _, err := conv.Output(ctx); err != nil {
		t.Fatal(err)
	}
	caller.End()

	for _, name := range []string{"agentd.v1.AgentService/Run", "agentd.v1.AgentService/Chat"} {
		span := clientSpan(t, spans, name)
		if span.Parent().SpanID() != caller.SpanContext().SpanID() {
			t.Errorf("%s: parent span %s, want the caller's %s", name, span.Parent().SpanID(), caller.SpanContext().SpanID())
		}
		if span.Status().Code != codes.Unset {
			t.Errorf("%s: span status %v %q, want unset (success)", name, span.Status().Code, span.Status().Description)
		}
	}
}
