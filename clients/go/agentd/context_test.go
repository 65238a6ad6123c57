package agentd_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// These tests freeze the connection of a call (the server's host vanished:
// no byte, no FIN, no RST) with keepalive off, so only the call's context
// can end it; it must, with the context's code. frozenCallBound is the
// failure limit only: nothing asserts how fast the call ends.
const frozenCallBound = 20 * time.Second

// frozenClient returns a client of agentd through a fault proxy (faults off,
// not frozen yet) with keepalive off and opts, and the proxy.
func frozenClient(t *testing.T, opts ...agentd.Option) (*agentd.Client, *faultProxy) {
	t.Helper()
	proxy := startFaultProxy(t, agentdAddr(t), 0)
	proxy.SetFaults(false)
	return agentd.NewClient(proxy.URL(), append([]agentd.Option{agentd.WithKeepalive(-1, 0)}, opts...)...), proxy
}

// waitFor runs fn in a goroutine and returns its error, or fails the test
// when bound ends first (fn is then left blocked on the frozen connection).
func waitFor(t *testing.T, bound context.Context, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-bound.Done():
		t.Fatalf("%s on the frozen connection did not end within %v", what, frozenCallBound)
		return nil
	}
}

func TestContextEndsAChatOnAFrozenConnection(t *testing.T) {
	cases := []struct {
		name        string
		retry       bool          // the default retry policy, else WithoutRetry
		chatTimeout time.Duration // the Chat context's timeout (0: none)
		sendTimeout time.Duration // a Send context with this timeout, made after the freeze (0: the Chat context)
		cancel      bool          // the Chat context is cancelled 1 s after the freeze
		close       bool          // Close is called 1 s after the freeze
		want        connect.Code
	}{
		// The first turn, before the freeze, takes milliseconds of the 3 s.
		{name: "chat deadline", chatTimeout: 3 * time.Second, want: connect.CodeDeadlineExceeded},
		{name: "chat deadline with retries", retry: true, chatTimeout: 3 * time.Second, want: connect.CodeDeadlineExceeded},
		{name: "send deadline", sendTimeout: time.Second, want: connect.CodeDeadlineExceeded},
		{name: "send deadline with retries", retry: true, sendTimeout: time.Second, want: connect.CodeDeadlineExceeded},
		{name: "chat cancelled", cancel: true, want: connect.CodeCanceled},
		{name: "chat cancelled with retries", retry: true, cancel: true, want: connect.CodeCanceled},
		{name: "closed", close: true, want: connect.CodeCanceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []agentd.Option
			if !tc.retry {
				opts = append(opts, agentd.WithoutRetry())
			}
			client, proxy := frozenClient(t, opts...)
			bound, cancelBound := context.WithTimeout(context.Background(), frozenCallBound)
			defer cancelBound()
			chatCtx, cancelChat := context.WithCancel(bound)
			defer cancelChat()
			if tc.chatTimeout > 0 {
				chatCtx, cancelChat = context.WithTimeout(bound, tc.chatTimeout)
				defer cancelChat()
			}
			conv := openChat(t, chatCtx, client, "assistant", agentd.ChatOptions{})
			runTurn(t, chatCtx, conv, "before the server vanished")

			proxy.FreezeAll() // the server's host is gone: nothing gets through, nothing is closed
			sendCtx := chatCtx
			if tc.sendTimeout > 0 {
				var cancelSend context.CancelFunc
				sendCtx, cancelSend = context.WithTimeout(bound, tc.sendTimeout)
				defer cancelSend()
			}
			if tc.cancel {
				time.AfterFunc(time.Second, cancelChat)
			}
			if tc.close {
				time.AfterFunc(time.Second, func() { _ = conv.Close() })
			}
			err := waitFor(t, bound, "the turn", func() error {
				turn, err := conv.SendText(sendCtx, "after the server vanished")
				if err == nil {
					_, err = turn.Wait()
				}
				return err
			})
			assertCode(t, err, tc.want)
			// The conversation is over: Output reports the same failure.
			err = waitFor(t, bound, "Output", func() error {
				_, err := conv.Output(context.Background())
				return err
			})
			assertCode(t, err, tc.want)
		})
	}
}

// Server streams (AttachInvocation, WatchSnapshot) close their request body
// once the request is sent, so net/http's HTTP/2 client watches their
// context itself: they need nothing of the Chat's fix, and this test keeps it
// so.
func TestContextEndsServerStreamsOnAFrozenConnection(t *testing.T) {
	direct := newClient(t)
	client, proxy := frozenClient(t, agentd.WithoutRetry())
	bound, cancelBound := context.WithTimeout(context.Background(), frozenCallBound)
	defer cancelBound()
	// Detached work that outlives the test (100 words, 200 ms each), aborted at its end.
	pending := detachSlowRun(t, bound, direct, strings.Repeat("word ", 100), 200).GetSnapshotId()
	t.Cleanup(func() { _, _ = direct.Abort(context.Background(), "assistant", pending) })

	attachCtx, cancelAttach := context.WithTimeout(bound, 4*time.Second)
	defer cancelAttach()
	run := client.Attach(attachCtx, "assistant", pending, 0)
	for _, err := range run.Chunks() {
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		break // the response has begun
	}
	watchCtx, cancelWatch := context.WithTimeout(bound, 4*time.Second)
	defer cancelWatch()
	next, stop := iter.Pull2(client.WatchSnapshot(watchCtx, "assistant", pending))
	defer stop()
	if status, err, ok := next(); !ok || err != nil {
		t.Fatalf("WatchSnapshot: first status %v, %v (ok %v)", status, err, ok)
	}

	proxy.FreezeAll()
	err := waitFor(t, bound, "AttachInvocation", func() error {
		_, err := run.Output()
		return err
	})
	assertCode(t, err, connect.CodeDeadlineExceeded)
	err = waitFor(t, bound, "WatchSnapshot", func() error {
		for {
			_, err, ok := next()
			if !ok || err != nil {
				return err
			}
		}
	})
	assertCode(t, err, connect.CodeDeadlineExceeded)
}
