package agentd_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// The default retry budget is bounded by time (issue 47): a Run made while
// agentd is down for 3 s — twice what the old 5-attempt budget waited at
// most — succeeds once agentd is back on the same port, after more than 5
// attempts, each retry starting within 30 s of the first failure.
func TestDefaultRetryBudgetRidesOutACrashAndRestart(t *testing.T) {
	store := "sqlite:" + filepath.Join(t.TempDir(), "agentd.db")
	first, err := startServer("--store", store)
	if err != nil {
		t.Fatal(err)
	}
	port := first.port
	var mu sync.Mutex
	var events []agentd.RetryEvent
	client := agentd.NewClient("http://127.0.0.1:"+strconv.Itoa(port), agentd.WithRetry(agentd.RetryPolicy{
		OnRetry: func(e agentd.RetryEvent) { mu.Lock(); events = append(events, e); mu.Unlock() },
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // startups are slow under load
	defer cancel()
	if _, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "before the crash"); err != nil {
		t.Fatal(err)
	}
	first.kill()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "while down")
		done <- result{agentd.MessageText(out.GetMessage()), err}
	}()
	time.Sleep(3 * time.Second) // the outage
	second, err := startServer("--store", store, "--port", strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer second.stop()
	res := <-done
	if res.err != nil || res.text != "echo: while down" {
		t.Fatalf("Run made while agentd was down = %q, %v; want the echo", res.text, res.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) <= 4 {
		t.Errorf("%d retries, want more than the old default's 4", len(events))
	}
	for i, e := range events {
		if e.Procedure != "Run" || e.Attempt != i+2 || e.Elapsed > agentd.DefaultMaxElapsed {
			t.Errorf("retry event %d = %+v, want Run attempt %d within 30 s", i, e, i+2)
		}
	}
}
