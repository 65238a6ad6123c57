package agentd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"regexp"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

func TestBackoffIsFullJitterUnderTheExponentialBound(t *testing.T) {
	r := newRetrier(RetryPolicy{})
	for n := range 8 {
		bound := min(DefaultMaxBackoff, DefaultInitialBackoff<<n)
		var top time.Duration
		for range 500 {
			d := r.backoff(n)
			if d < 0 || d > bound {
				t.Fatalf("backoff(%d) = %v, want within [0, %v]", n, d, bound)
			}
			top = max(top, d)
		}
		if top < bound/2 {
			t.Errorf("backoff(%d): largest of 500 delays %v, want the jitter to span [0, %v]", n, top, bound)
		}
	}
}

func TestRetryWaitGivesUpWhenTheDelayWouldPassTheDeadline(t *testing.T) {
	r := newRetrier(RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour})
	// A deadline 5 s away: giving up "at once" (under half of it, however loaded the machine) is told
	// from waiting for the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unavailable := connect.NewError(connect.CodeUnavailable, errors.New("down"))
	// Try until a delay longer than the deadline is drawn (all but certain).
	for range 20 {
		start := time.Now()
		if r.wait(ctx, "Run", &retryStreak{}, unavailable) {
			continue
		}
		if time.Since(start) > 2500*time.Millisecond {
			t.Fatalf("wait took %v before giving up, want it to give up at once", time.Since(start))
		}
		if r.retries.Load() != 0 {
			t.Errorf("retries = %d, want 0: no retry was made", r.retries.Load())
		}
		return
	}
	t.Fatal("wait retried 20 times with 1h backoffs and a 5s deadline")
}

func TestRetryWaitStopsAtMaxAttempts(t *testing.T) {
	var events []RetryEvent
	r := newRetrier(RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, OnRetry: func(e RetryEvent) { events = append(events, e) }})
	unavailable := connect.NewError(connect.CodeUnavailable, errors.New("down"))
	calls := 0
	_, err := retryCall(context.Background(), r, "GetSession", func(context.Context) (int, error) {
		calls++
		return 0, unavailable
	})
	if !errors.Is(err, unavailable) || calls != 3 {
		t.Errorf("retryCall: %d calls, err %v; want 3 calls and the last error", calls, err)
	}
	if len(events) != 2 || events[0].Attempt != 2 || events[1].Attempt != 3 || events[1].Procedure != "GetSession" || events[1].Code != connect.CodeUnavailable {
		t.Errorf("OnRetry events = %+v, want attempts 2 and 3 of GetSession, UNAVAILABLE", events)
	}
	if r.retries.Load() != 2 {
		t.Errorf("retries = %d, want 2", r.retries.Load())
	}
}

func TestRetryableTakesUnavailableAndTransportFailuresOnly(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// A status the server sent, as connect-go decodes it.
	wire := func(code connect.Code) error { return connect.NewWireError(code, errors.New("from the server")) }
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"UNAVAILABLE from the server", live, wire(connect.CodeUnavailable), true},
		{"reset connection (client-side UNAVAILABLE)", live, connect.NewError(connect.CodeUnavailable, errors.New("connection reset by peer")), true},
		{"RST_STREAM (client-side CANCELED)", live, connect.NewError(connect.CodeCanceled, errors.New("stream reset")), true},
		{"closed connection (client-side UNKNOWN)", live, connect.NewError(connect.CodeUnknown, errors.New("EOF")), true},
		{"stream ended early", live, connect.NewError(connect.CodeInternal, streamEndedError("ended")), true},
		{"INTERNAL from the server", live, wire(connect.CodeInternal), false},
		{"CANCELED from the server", live, wire(connect.CodeCanceled), false},
		{"INVALID_ARGUMENT", live, wire(connect.CodeInvalidArgument), false},
		{"NOT_FOUND", live, wire(connect.CodeNotFound), false},
		{"FAILED_PRECONDITION", live, wire(connect.CodeFailedPrecondition), false},
		{"ABORTED", live, wire(connect.CodeAborted), false},
		{"DEADLINE_EXCEEDED", live, connect.NewError(connect.CodeDeadlineExceeded, context.DeadlineExceeded), false},
		{"the caller's cancel", cancelled, connect.NewError(connect.CodeCanceled, context.Canceled), false},
		{"UNAVAILABLE after the caller's cancel", cancelled, wire(connect.CodeUnavailable), false},
	}
	for _, c := range cases {
		if got := retryable(c.ctx, c.err); got != c.want {
			t.Errorf("%s: retryable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNewRequestIDIsACanonicalRandomUUIDv4(t *testing.T) {
	canonical := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewRequestID()
		if !canonical.MatchString(id) {
			t.Fatalf("NewRequestID() = %q, want a lowercase canonical UUID v4", id)
		}
		if seen[id] {
			t.Fatalf("NewRequestID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestWithRequestIDKeepsTheCallersIDAndLeavesTheInputUnchanged(t *testing.T) {
	mine := TextInput("mine")
	mine.RequestId = "caller-1"
	if got := withRequestID(mine); got != mine {
		t.Errorf("withRequestID of an input with an ID returned a different input %v", got)
	}
	bare := TextInput("bare")
	got := withRequestID(bare)
	if bare.GetRequestId() != "" {
		t.Errorf("withRequestID set the caller's input's ID to %q, want it unchanged", bare.GetRequestId())
	}
	if got.GetRequestId() == "" || !proto.Equal(got.GetMessage(), bare.GetMessage()) {
		t.Errorf("withRequestID = %v, want the same input with a request ID", got)
	}
}

func TestRetryDefaultsAreBoundedByTimeNotAttempts(t *testing.T) {
	r := newRetrier(RetryPolicy{})
	if r.policy.MaxElapsed != 30*time.Second || r.policy.MaxAttempts != 0 || r.policy.MaxBackoff != 2*time.Second {
		t.Fatalf("default policy = %+v, want MaxElapsed 30s, no attempt limit, MaxBackoff 2s", r.policy)
	}
	// The backoff bound doubles from 100ms and reaches its 2s cap at retry 6 (n = 5).
	bounds := []time.Duration{}
	for n := range 7 {
		bounds = append(bounds, min(r.policy.MaxBackoff, r.policy.InitialBackoff<<n))
	}
	if bounds[5] != 2*time.Second || bounds[4] != 1600*time.Millisecond {
		t.Errorf("backoff bounds %v, want the 2s cap reached at the sixth retry", bounds)
	}
	if !r.enabled() || !newRetrier(RetryPolicy{MaxAttempts: 5}).enabled() || newRetrier(RetryPolicy{MaxAttempts: 1}).enabled() {
		t.Error("enabled: want true for the default and MaxAttempts 5, false for MaxAttempts 1")
	}
}

func TestRetryStopsOnceMaxElapsedHasPassedSinceTheFirstFailure(t *testing.T) {
	// Bounds that hold however slowly a loaded machine runs the loop: every retry starts within
	// MaxElapsed, the last failure came at most one backoff before it, and 2 s hold far more
	// attempts than a count-bounded budget's 5 even at 100 ms an attempt.
	const maxElapsed = 2 * time.Second
	const maxBackoff = 20 * time.Millisecond
	var events []RetryEvent
	r := newRetrier(RetryPolicy{
		MaxElapsed: maxElapsed, InitialBackoff: 5 * time.Millisecond, MaxBackoff: maxBackoff,
		OnRetry: func(e RetryEvent) { events = append(events, e) },
	})
	unavailable := connect.NewError(connect.CodeUnavailable, errors.New("down"))
	calls := 0
	var firstFailure time.Time
	_, err := retryCall(context.Background(), r, "Run", func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			firstFailure = time.Now()
		}
		return 0, unavailable
	})
	gaveUp := time.Since(firstFailure)
	if !errors.Is(err, unavailable) {
		t.Fatalf("retryCall: %v, want the last error", err)
	}
	if calls <= 5 || len(events) != calls-1 {
		t.Errorf("%d calls, %d events; want more than 5 calls and one event per retry", calls, len(events))
	}
	for i, e := range events {
		if e.Elapsed > maxElapsed || e.Attempt != i+2 {
			t.Errorf("event %d = %+v, want attempt %d starting within MaxElapsed", i, e, i+2)
		}
	}
	if gaveUp < maxElapsed-maxBackoff {
		t.Errorf("gave up %v after the first failure, want the retries to use the %v window (but for one backoff)", gaveUp, maxElapsed)
	}
}

func TestRetryStreakStartsAfreshAfterProgress(t *testing.T) {
	r := newRetrier(RetryPolicy{MaxElapsed: 50 * time.Millisecond, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	unavailable := connect.NewError(connect.CodeUnavailable, errors.New("down"))
	var streak retryStreak
	if !r.wait(context.Background(), "Chat", &streak, unavailable) {
		t.Fatal("first failure not retried")
	}
	time.Sleep(80 * time.Millisecond) // the conversation runs for longer than MaxElapsed
	streak.reset()                    // ... and makes progress
	if !r.wait(context.Background(), "Chat", &streak, unavailable) {
		t.Error("a failure after progress was not retried: the window must count from the first failure since the progress")
	}
	time.Sleep(80 * time.Millisecond) // without progress the window closes
	if r.wait(context.Background(), "Chat", &streak, unavailable) {
		t.Error("retried past MaxElapsed since the first failure of the streak")
	}
}

func TestRetryableRefusesTLSFailuresARetryCannotFix(t *testing.T) {
	live := context.Background()
	for _, cause := range []error{
		&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}},
		x509.HostnameError{Host: "wrong.test", Certificate: &x509.Certificate{}},
		tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"},
		&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")},
	} {
		if retryable(live, connect.NewError(connect.CodeUnavailable, cause)) {
			t.Errorf("retryable(UNAVAILABLE caused by %T %v) = true, want false: a retry cannot fix it", cause, cause)
		}
	}
	reset := &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}
	if !retryable(live, connect.NewError(connect.CodeUnavailable, reset)) {
		t.Error("a reset connection is no longer retried")
	}
}
