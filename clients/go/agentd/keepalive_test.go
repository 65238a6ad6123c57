package agentd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// A short keepalive for the tests: a PING after 200 ms without a frame; an
// unanswered one closes the connection after 5 s (generous: a live agentd on
// a loaded machine answers well within it, so a live call is never cut).
const (
	testKeepaliveInterval = 200 * time.Millisecond
	testKeepaliveTimeout  = 5 * time.Second
)

// turnAfterFreeze sends text on conv and waits for the turn's end, or for
// ctx to end (the failure bound: the keepalive must end the turn well
// before it; were ctx to end first, the turn would fail with its deadline,
// see context_test.go). finished is false when ctx ended first.
func turnAfterFreeze(ctx context.Context, conv *agentd.Conversation, text string) (turn *agentd.Turn, err error, finished bool) {
	type result struct {
		turn *agentd.Turn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		turn, err := conv.SendText(ctx, text)
		if err == nil {
			_, err = turn.Wait()
		}
		done <- result{turn, err}
	}()
	select {
	case r := <-done:
		return r.turn, r.err, true
	case <-ctx.Done():
		return nil, nil, false
	}
}

func TestKeepaliveFailsAChatWhoseServerVanished(t *testing.T) {
	proxy := startFaultProxy(t, agentdAddr(t), 0)
	proxy.SetFaults(false)
	client := agentd.NewClient(proxy.URL(), agentd.WithKeepalive(testKeepaliveInterval, testKeepaliveTimeout), agentd.WithoutRetry())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the failure bound only
	defer cancel()
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "before the server vanished")

	proxy.FreezeAll() // the server's host is gone: the connection stays open, nothing gets through
	_, err, finished := turnAfterFreeze(ctx, conv, "after the server vanished")
	if !finished {
		t.Fatal("the turn on the vanished connection did not fail before the test's deadline")
	}
	assertCode(t, err, connect.CodeUnavailable)
}

func TestKeepaliveLetsAChatWhoseServerVanishedContinueOnANewConnection(t *testing.T) {
	proxy := startFaultProxy(t, agentdAddr(t), 0)
	proxy.SetFaults(false)
	var mu sync.Mutex
	var retried []connect.Code
	client := agentd.NewClient(proxy.URL(), agentd.WithKeepalive(testKeepaliveInterval, testKeepaliveTimeout),
		agentd.WithRetry(agentd.RetryPolicy{OnRetry: func(e agentd.RetryEvent) {
			mu.Lock()
			defer mu.Unlock()
			retried = append(retried, e.Code)
		}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the failure bound only
	defer cancel()
	// BusyInterrupt: the reopened stream takes the session over from the
	// server's invocation of the vanished one, which the server ends only
	// when its own keepalive gives up.
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{BusyPolicy: agentd.BusyInterrupt})
	runTurn(t, ctx, conv, "before the server vanished")

	proxy.FreezeAll() // connections opened later go through
	turn, err, finished := turnAfterFreeze(ctx, conv, "after the server vanished")
	if !finished {
		t.Fatal("the turn on the vanished connection did not end before the test's deadline")
	}
	if err != nil {
		t.Fatalf("turn after the freeze: %v, want it re-sent on a new connection", err)
	}
	if got, want := turn.Text(), "echo: after the server vanished"; got != want {
		t.Errorf("turn text %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retried) == 0 || retried[0] != connect.CodeUnavailable {
		t.Errorf("retries with codes %v, want the first for the lost connection (unavailable)", retried)
	}
}
