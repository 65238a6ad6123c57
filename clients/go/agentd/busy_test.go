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

// holdSession opens a Chat on assistant, runs one turn ("held") and leaves
// the stream open, so the new session stays busy until the conversation ends.
func holdSession(t *testing.T, ctx context.Context, client *agentd.Client) *agentd.Conversation {
	t.Helper()
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "held")
	if conv.SessionID() == "" {
		t.Fatal("no session ID after the holder's first turn")
	}
	return conv
}

// runResult is what a Run started in a goroutine returned.
type runResult struct {
	out *agentdv1.AgentOutput
	err error
}

// runAsync starts RunText in a goroutine and returns the channel of its result.
func runAsync(ctx context.Context, client *agentd.Client, opts agentd.ChatOptions, text string) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		out, err := client.RunText(ctx, "assistant", opts, text)
		done <- runResult{out, err}
	}()
	return done
}

// awaitRun waits for a Run started with runAsync.
func awaitRun(t *testing.T, done <-chan runResult) runResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("the Run did not return within 20s")
		return runResult{}
	}
}

// latestHistory returns the texts of the session's latest snapshot.
func latestHistory(t *testing.T, ctx context.Context, client *agentd.Client, sessionID string) (*agentdv1.Snapshot, []string) {
	t.Helper()
	snap, err := client.GetLatestSnapshot(ctx, "assistant", sessionID)
	if err != nil {
		t.Fatalf("GetLatestSnapshot: %v", err)
	}
	return snap, historyTexts(snap)
}

// sentBusyPolicies records the busy policy of every Run request a client sends.
type sentBusyPolicies struct {
	mu       sync.Mutex
	policies []agentdv1.BusyPolicy
}

func (s *sentBusyPolicies) interceptor() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if run, ok := req.Any().(*agentdv1.RunRequest); ok {
				s.mu.Lock()
				s.policies = append(s.policies, run.GetInit().GetBusyPolicy())
				s.mu.Unlock()
			}
			return next(ctx, req)
		}
	}
}

func (s *sentBusyPolicies) get() []agentdv1.BusyPolicy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.policies)
}

func TestBusyRejectFailsARunOnAnOpenChatsSessionWithAborted(t *testing.T) {
	ctx := testContext(t)
	holder := holdSession(t, ctx, newClient(t))

	var sent sentBusyPolicies
	client := newClient(t, agentd.WithClientOptions(connect.WithInterceptors(sent.interceptor())))
	_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: holder.SessionID(), BusyPolicy: agentd.BusyReject}, "intruder")
	assertCode(t, err, connect.CodeAborted)
	if !strings.Contains(err.Error(), "busy") {
		t.Errorf("error = %v, want a message saying the session is busy", err)
	}
	// The server's default is REJECT too: check the policy went on the wire.
	if got := sent.get(); len(got) != 1 || got[0] != agentdv1.BusyPolicy_BUSY_POLICY_REJECT {
		t.Errorf("sent busy policies = %v, want [BUSY_POLICY_REJECT]", got)
	}

	// The holder is unaffected: it runs another turn and ends normally.
	if second := runTurn(t, ctx, holder, "still mine"); second.Text() != "echo: still mine" {
		t.Errorf("holder's turn after the rejected Run = %q", second.Text())
	}
	if _, err := holder.Output(ctx); err != nil {
		t.Fatalf("holder Output: %v", err)
	}
	_, texts := latestHistory(t, ctx, client, holder.SessionID())
	if slices.Contains(texts, "intruder") {
		t.Errorf("history = %q: the rejected Run was written", texts)
	}
}

func TestBusyEnqueueWaitsForTheChatAndContinuesItsHistory(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	holder := holdSession(t, ctx, client)
	sessionID := holder.SessionID()

	done := runAsync(ctx, client, agentd.ChatOptions{SessionID: sessionID, BusyPolicy: agentd.BusyEnqueue}, "queued")
	select {
	case res := <-done:
		t.Fatalf("the ENQUEUE Run returned while the Chat held the session: output %v, err %v", res.out, res.err)
	case <-time.After(500 * time.Millisecond):
	}
	// A turn taken while the Run waits is part of the history it continues.
	runTurn(t, ctx, holder, "meanwhile")
	if _, err := holder.Output(ctx); err != nil {
		t.Fatalf("holder Output: %v", err)
	}

	res := awaitRun(t, done)
	if res.err != nil {
		t.Fatalf("ENQUEUE Run: %v", res.err)
	}
	if agentd.MessageText(res.out.GetMessage()) != "echo: queued" || res.out.GetSessionId() != sessionID {
		t.Errorf("ENQUEUE Run = %q in session %q, want %q in %q", agentd.MessageText(res.out.GetMessage()), res.out.GetSessionId(), "echo: queued", sessionID)
	}
	snap, texts := latestHistory(t, ctx, client, sessionID)
	want := []string{"held", "echo: held", "meanwhile", "echo: meanwhile", "queued", "echo: queued"}
	if !slices.Equal(texts, want) {
		t.Errorf("latest history = %q, want %q", texts, want)
	}
	if snap.GetSnapshotId() != res.out.GetSnapshotId() || snap.GetTurnIndex() != 2 {
		t.Errorf("latest snapshot = %s (turn %d), want the queued Run's %s (turn 2)", snap.GetSnapshotId(), snap.GetTurnIndex(), res.out.GetSnapshotId())
	}
}

func TestBusyEnqueueIsBoundedByTheCallDeadline(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	holder := holdSession(t, ctx, client)

	short, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	_, err := client.RunText(short, "assistant", agentd.ChatOptions{SessionID: holder.SessionID(), BusyPolicy: agentd.BusyEnqueue}, "too late")
	assertCode(t, err, connect.CodeDeadlineExceeded)
	if _, err := holder.Output(ctx); err != nil {
		t.Fatalf("holder Output: %v", err)
	}
}

func TestBusyInterruptEndsTheHoldersChatWithAbortedAndRuns(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	holder := holdSession(t, ctx, client)
	sessionID := holder.SessionID()

	out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: sessionID, BusyPolicy: agentd.BusyInterrupt}, "takeover")
	if err != nil {
		t.Fatalf("INTERRUPT Run: %v", err)
	}
	if agentd.MessageText(out.GetMessage()) != "echo: takeover" || out.GetSessionId() != sessionID {
		t.Errorf("INTERRUPT Run = %q in session %q, want %q in %q", agentd.MessageText(out.GetMessage()), out.GetSessionId(), "echo: takeover", sessionID)
	}

	_, err = holder.Output(ctx)
	assertCode(t, err, connect.CodeAborted)

	// The holder's finished turn stays; the interrupting Run continues it.
	_, texts := latestHistory(t, ctx, client, sessionID)
	want := []string{"held", "echo: held", "takeover", "echo: takeover"}
	if !slices.Equal(texts, want) {
		t.Errorf("latest history = %q, want %q", texts, want)
	}
}
