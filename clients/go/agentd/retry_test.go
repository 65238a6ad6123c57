package agentd_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// retryRecorder collects the RetryEvents of a client's OnRetry hook.
type retryRecorder struct {
	mu     sync.Mutex
	events []agentd.RetryEvent
}

func (r *retryRecorder) record(e agentd.RetryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *retryRecorder) all() []agentd.RetryEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// oneResetProxy returns a fault proxy in front of the shared server that
// resets the first connection within its first few hundred bytes (during
// the first call), then forwards faithfully.
func oneResetProxy(t *testing.T) *faultProxy {
	t.Helper()
	// 100–300 bytes into the connection: every call a test makes through it is longer, so
	// the one reset always hits it (at 400 on average a small unary call could finish first).
	proxy := startFaultProxy(t, agentdAddr(t), 200)
	proxy.LimitResets(1)
	return proxy
}

// transportCodes are the codes connect-go gives a reset connection.
var transportCodes = []connect.Code{connect.CodeUnavailable, connect.CodeCanceled, connect.CodeUnknown, connect.CodeInternal}

func TestRetryHookAndCounterFireForACallRetriedAfterAReset(t *testing.T) {
	ctx := testContext(t)
	proxy := oneResetProxy(t)
	var rec retryRecorder
	client := agentd.NewClient(proxy.URL(), agentd.WithRetry(agentd.RetryPolicy{OnRetry: rec.record}))

	agents, err := client.ListAgents(ctx)
	if err != nil {
		t.Fatalf("ListAgents through one reset: %v, want it retried to success", err)
	}
	if len(agents) == 0 {
		t.Errorf("ListAgents returned no agents")
	}
	if proxy.Resets() != 1 {
		t.Fatalf("proxy resets = %d, want 1", proxy.Resets())
	}
	events := rec.all()
	if len(events) != 1 {
		t.Fatalf("OnRetry events = %+v, want one", events)
	}
	e := events[0]
	if e.Procedure != "ListAgents" || e.Attempt != 2 || e.Err == nil || !slices.Contains(transportCodes, e.Code) {
		t.Errorf("OnRetry event = %+v, want ListAgents, attempt 2, a transport code", e)
	}
	if e.Delay < 0 || e.Delay > agentd.DefaultInitialBackoff {
		t.Errorf("first retry delay = %v, want within [0, %v]", e.Delay, agentd.DefaultInitialBackoff)
	}
	if got := client.Stats().Retries; got != 1 {
		t.Errorf("Stats().Retries = %d, want 1", got)
	}
}

func TestWithoutRetrySurfacesTheResetToTheCaller(t *testing.T) {
	ctx := testContext(t)
	proxy := oneResetProxy(t)
	client := agentd.NewClient(proxy.URL(), agentd.WithoutRetry())

	_, err := client.ListAgents(ctx)
	if err == nil {
		t.Fatal("ListAgents through a reset with WithoutRetry succeeded, want the reset's error")
	}
	if code := connect.CodeOf(err); !slices.Contains(transportCodes, code) {
		t.Errorf("ListAgents error %v (code %v), want a transport code %v", err, code, transportCodes)
	}
	if got := client.Stats().Retries; got != 0 {
		t.Errorf("Stats().Retries = %d, want 0 with WithoutRetry", got)
	}
	if proxy.Resets() != 1 {
		t.Errorf("proxy resets = %d, want 1", proxy.Resets())
	}
}

func TestRetryIsNotMadeForAStatusTheServerSent(t *testing.T) {
	ctx := testContext(t)
	var rec retryRecorder
	client := newClient(t, agentd.WithRetry(agentd.RetryPolicy{OnRetry: rec.record}))

	_, err := client.GetSnapshot(ctx, "assistant", "no-such-snapshot")
	assertCode(t, err, connect.CodeNotFound)
	if events := rec.all(); len(events) != 0 {
		t.Errorf("OnRetry events = %+v for NOT_FOUND, want none", events)
	}
	if got := client.Stats().Retries; got != 0 {
		t.Errorf("Stats().Retries = %d after NOT_FOUND, want 0", got)
	}
}

func TestRetryIsNotMadeForAMalformedRequestID(t *testing.T) {
	ctx := testContext(t)
	var rec retryRecorder
	client := newClient(t, agentd.WithRetry(agentd.RetryPolicy{OnRetry: rec.record}))
	input := agentd.TextInput("hi")
	input.RequestId = "not a valid id!"

	_, err := client.Run(ctx, "assistant", agentd.ChatOptions{}, input)
	assertCode(t, err, connect.CodeInvalidArgument)
	if events := rec.all(); len(events) != 0 {
		t.Errorf("OnRetry events = %+v for INVALID_ARGUMENT, want none", events)
	}
}

func TestRetryIsNotMadeAfterTheCallersCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	var rec retryRecorder
	client := newClient(t, agentd.WithRetry(agentd.RetryPolicy{OnRetry: rec.record}))
	// A slow turn, cancelled by the caller while it runs.
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	turn, err := conv.Send(ctx, slowInput(t, "cancel me", 2000))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = turn.Wait()
	assertCode(t, err, connect.CodeCanceled)
	if events := rec.all(); len(events) != 0 {
		t.Errorf("OnRetry events = %+v after the caller's cancel, want none", events)
	}
}

func TestRunRetriedThroughAResetStoresItsInputOnce(t *testing.T) {
	ctx := testContext(t)
	proxy := oneResetProxy(t)
	client := agentd.NewClient(proxy.URL())

	out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "run once")
	if err != nil {
		t.Fatalf("RunText through one reset: %v", err)
	}
	if client.Stats().Retries == 0 {
		t.Fatalf("Stats().Retries = 0: the reset did not hit the Run")
	}
	if got := sessionInputs(t, ctx, out.GetSessionId()); !slices.Equal(got, []string{"run once"}) {
		t.Errorf("session inputs = %q, want [\"run once\"] once", got)
	}
}

func TestChatReconnectsAfterAResetAndDeliversEachTurnOnce(t *testing.T) {
	ctx := testContext(t)
	proxy := oneResetProxy(t)
	client := agentd.NewClient(proxy.URL())
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})

	first := runTurn(t, ctx, conv, "across a reset")
	second := runTurn(t, ctx, conv, "after it")
	if client.Stats().Retries == 0 || proxy.Resets() != 1 {
		t.Fatalf("retries %d, resets %d: the reset did not hit the conversation", client.Stats().Retries, proxy.Resets())
	}
	// The first turn may have committed before the reset: its retry is then
	// answered by the TurnEnd alone, and its text is what arrived before.
	if got := first.Text(); !strings.HasPrefix("echo: across a reset", got) {
		t.Errorf("first turn text = %q, want a prefix of the echo (no chunk twice)", got)
	}
	if got := second.Text(); got != "echo: after it" {
		t.Errorf("second turn text = %q, want the echo once", got)
	}
	if first.Index() != 0 || second.Index() != 1 {
		t.Errorf("turn indexes = %d, %d, want 0, 1", first.Index(), second.Index())
	}
	if got := sessionInputs(t, ctx, conv.SessionID()); !slices.Equal(got, []string{"across a reset", "after it"}) {
		t.Errorf("session inputs = %q, want each once, in order", got)
	}
}

func TestChatReconnectWaitsOutItsOwnStaleInvocationOnTheSession(t *testing.T) {
	ctx := testContext(t)
	proxy := startFaultProxy(t, agentdAddr(t), 1<<30)
	proxy.HoldUpstream(300 * time.Millisecond) // the server sees the drop late
	var rec retryRecorder
	client := agentd.NewClient(proxy.URL(), agentd.WithRetry(agentd.RetryPolicy{
		MaxAttempts: 10, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, OnRetry: rec.record,
	}))
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "before")

	proxy.ResetAll() // between turns: the old invocation still holds the session
	after := runTurn(t, ctx, conv, "after")
	if got := after.Text(); got != "echo: after" {
		t.Errorf("turn text = %q, want the echo", got)
	}
	codes := map[connect.Code]bool{}
	for _, e := range rec.all() {
		codes[e.Code] = true
	}
	if !codes[connect.CodeAborted] {
		t.Fatalf("retried codes %v: the reconnect never met the stale invocation (ABORTED)", codes)
	}
	if got := sessionInputs(t, ctx, conv.SessionID()); !slices.Equal(got, []string{"before", "after"}) {
		t.Errorf("session inputs = %q, want each once, in order", got)
	}
}

func TestRunWithTheCallersRequestIDTwiceRunsOnce(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	input := agentd.TextInput("mine")
	input.RequestId = agentd.NewRequestID()

	first, err := client.Run(ctx, "assistant", agentd.ChatOptions{}, input)
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.Run(ctx, "assistant", agentd.ChatOptions{}, input)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetSessionId() != second.GetSessionId() || first.GetSnapshotId() != second.GetSnapshotId() {
		t.Errorf("second Run with request ID %s: session %s snapshot %s, want the first's %s %s",
			input.RequestId, second.GetSessionId(), second.GetSnapshotId(), first.GetSessionId(), first.GetSnapshotId())
	}
}

// sessionInputs reads the user inputs stored in session, through a direct
// client.
func sessionInputs(t *testing.T, ctx context.Context, session string) []string {
	t.Helper()
	snap, err := newClient(t).GetLatestSnapshot(ctx, "assistant", session)
	if err != nil {
		t.Fatalf("GetLatestSnapshot(%s): %v", session, err)
	}
	return userTexts(snap.GetState())
}

func TestAttachReopensAfterAResetAndReadsEachChunkOnce(t *testing.T) {
	ctx := testContext(t)
	words := strings.Repeat("one two three four five six seven eight ", 3)
	pending := detachSlowRun(t, ctx, newClient(t), words, 20).GetSnapshotId()
	proxy := startFaultProxy(t, agentdAddr(t), 800) // cut after a few chunks, usually
	proxy.LimitResets(1)
	client := agentd.NewClient(proxy.URL())

	run := client.Attach(ctx, "assistant", pending, 0)
	defer run.Close()
	var sequences []uint32
	for chunk, err := range run.Chunks() {
		if err != nil {
			t.Fatalf("Attach through a reset: %v", err)
		}
		sequences = append(sequences, chunk.GetSequence())
	}
	out, err := run.Output()
	if err != nil || out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
		t.Fatalf("Attach output: %v, %v; want STOP", out.GetFinishReason(), err)
	}
	if proxy.Resets() != 1 || client.Stats().Retries == 0 {
		t.Fatalf("resets %d, retries %d: the reset did not hit the attach", proxy.Resets(), client.Stats().Retries)
	}
	for i, seq := range sequences {
		if seq != uint32(i+1) {
			t.Fatalf("sequences %v, want 1, 2, 3, … each once", sequences)
		}
	}
	if got := run.Text(); got != "echo: "+words {
		t.Errorf("attached text = %q, want the whole echo once", got)
	}
}

func TestWatchSnapshotReopensAfterAResetWithoutRepeatingAStatus(t *testing.T) {
	ctx := testContext(t)
	pending := detachSlowRun(t, ctx, newClient(t), "watch me through a reset", 150).GetSnapshotId()
	proxy := startFaultProxy(t, agentdAddr(t), 1<<30)
	client := agentd.NewClient(proxy.URL())

	var statuses []agentdv1.SnapshotStatus
	for status, err := range client.WatchSnapshot(ctx, "assistant", pending) {
		if err != nil {
			t.Fatalf("WatchSnapshot through a reset: %v (statuses so far %v)", err, statuses)
		}
		statuses = append(statuses, status)
		if len(statuses) == 1 {
			proxy.ResetAll() // the watch re-opens, and gets PENDING again first
		}
	}
	if proxy.Resets() != 1 || client.Stats().Retries == 0 {
		t.Fatalf("resets %d, retries %d: the reset did not hit the watch", proxy.Resets(), client.Stats().Retries)
	}
	want := []agentdv1.SnapshotStatus{agentdv1.SnapshotStatus_SNAPSHOT_STATUS_PENDING, agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED}
	if !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want %v (each once)", statuses, want)
	}
}

// requestIDRecorder is an interceptor that records the request ID of every
// Run and DeleteSession attempt the client sends.
type requestIDRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *requestIDRecorder) interceptor() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			var id string
			switch msg := req.Any().(type) {
			case *agentdv1.RunRequest:
				id = msg.GetInput().GetRequestId()
			case *agentdv1.DeleteSessionRequest:
				id = msg.GetRequestId()
			}
			r.mu.Lock()
			r.ids = append(r.ids, id)
			r.mu.Unlock()
			return next(ctx, req)
		}
	})
}

func (r *requestIDRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

func TestRetriedRunAndDeleteSessionResendTheirRequestID(t *testing.T) {
	ctx := testContext(t)
	session, err := newClient(t).RunText(ctx, "assistant", agentd.ChatOptions{}, "to delete")
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		name string
		do   func(*agentd.Client) error
	}{
		{"Run", func(c *agentd.Client) error {
			_, err := c.RunText(ctx, "assistant", agentd.ChatOptions{}, "retried run")
			return err
		}},
		{"DeleteSession", func(c *agentd.Client) error {
			_, err := c.DeleteSession(ctx, session.GetSessionId())
			return err
		}},
	} {
		var rec requestIDRecorder
		proxy := startFaultProxy(t, agentdAddr(t), 100) // cut in the first attempt
		proxy.LimitResets(1)
		client := agentd.NewClient(proxy.URL(), agentd.WithInterceptors(rec.interceptor()))
		if err := call.do(client); err != nil {
			t.Fatalf("%s through one reset: %v", call.name, err)
		}
		ids := rec.all()
		if len(ids) < 2 || ids[0] == "" || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			t.Errorf("%s attempts carried request IDs %q, want two or more, all the same, none empty", call.name, ids)
		}
	}
}
