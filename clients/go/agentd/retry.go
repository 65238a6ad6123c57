package agentd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
)

// The defaults of RetryPolicy: its zero fields take these values.
const (
	// DefaultMaxElapsed is how long a call keeps retrying after its first
	// failure (since it last made progress): long enough to ride out a
	// restart of agentd.
	DefaultMaxElapsed = 30 * time.Second
	// DefaultMaxAttempts is the most attempts of one call: 0, no limit (the
	// retries are bounded by MaxElapsed and the context's deadline).
	DefaultMaxAttempts = 0
	// DefaultInitialBackoff is the backoff bound before the first retry.
	DefaultInitialBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the backoff bound; it is reached at the sixth
	// retry with the other defaults.
	DefaultMaxBackoff = 2 * time.Second
)

// RetryPolicy says how a Client retries what may not have happened: a call
// or stream that failed with connect.CodeUnavailable, or a transport failure
// (reset, refused or closed connection, GOAWAY, HTTP/2 RST_STREAM) that the
// caller's own context did not cause, or a Chat or AttachInvocation stream
// that ended before the TurnEnd or output it was waiting for. Every other
// code (connect.CodeInvalidArgument, CodeNotFound, CodeFailedPrecondition,
// CodeDeadlineExceeded, ...) and the caller's cancellation are returned at
// once. A retry is safe because every input carries a request ID
// (AgentInput.RequestId) that the server deduplicates: a retried turn that
// was committed answers with the committed TurnEnd and does not run again.
//
// The budget is bounded by time: a call keeps retrying until MaxElapsed
// (default 30 s) has passed since its first failure, counted afresh once a
// stream or conversation makes progress (a chunk delivered, a TurnEnd), and
// never past its context's deadline. Zero fields take the defaults
// (DefaultMaxElapsed, DefaultMaxAttempts, DefaultInitialBackoff,
// DefaultMaxBackoff). The delay before retry n (from 0) is a uniformly random
// duration in [0, min(MaxBackoff, InitialBackoff * 2^n)] ("full jitter"); a
// retry that would start more than MaxElapsed after the first failure, or
// whose delay would end past the context's deadline, is not made, and the
// last error is returned.
type RetryPolicy struct {
	// MaxElapsed is how long after the first failure (since the call last
	// made progress) a retry may still start; zero means
	// DefaultMaxElapsed (30 s), a negative value no time limit (the
	// context's deadline and MaxAttempts then bound the retries).
	MaxElapsed time.Duration
	// MaxAttempts is the most attempts of one call, the first included
	// (1: never retry; 0 or negative: no limit, the default). A stream or
	// Conversation counts its attempts since it last made progress
	// (received a chunk it delivered or a TurnEnd).
	MaxAttempts int
	// InitialBackoff bounds the delay before the first retry.
	InitialBackoff time.Duration
	// MaxBackoff caps the bound of every delay.
	MaxBackoff time.Duration
	// OnRetry, when set, is called before each retry (before its delay),
	// from the goroutine making the call. It must not block.
	OnRetry func(RetryEvent)
}

// RetryEvent describes one retry about to be made.
type RetryEvent struct {
	// Procedure is the RPC retried, for example "Chat" or "GetSnapshot".
	Procedure string
	// Attempt is the number of the attempt about to be made (2 for the
	// first retry).
	Attempt int
	// Delay is how long the client waits before that attempt.
	Delay time.Duration
	// Elapsed is when that attempt starts, counted from the first failure
	// since the call last made progress: at most MaxElapsed.
	Elapsed time.Duration
	// Code is the code of the failure retried.
	Code connect.Code
	// Err is the failure retried.
	Err error
}

// Stats counts what a Client did; read it with Client.Stats.
type Stats struct {
	// Retries is the number of retries made (attempts after the first) by
	// every call and conversation of the client.
	Retries uint64
}

// WithRetry sets the retry policy of the client (retries are on by default,
// with the defaults of RetryPolicy). MaxAttempts 1 turns them off.
func WithRetry(policy RetryPolicy) Option {
	return func(cfg *clientConfig) { cfg.retry = policy }
}

// WithoutRetry turns retries off: every failure is returned to the caller as
// it happened. Inputs still carry a request ID, so the caller can retry
// them safely itself.
func WithoutRetry() Option {
	return WithRetry(RetryPolicy{MaxAttempts: 1})
}

// retrier applies a RetryPolicy and counts its retries.
type retrier struct {
	policy  RetryPolicy
	retries atomic.Uint64
}

// newRetrier fills the zero fields of policy with the defaults.
func newRetrier(policy RetryPolicy) *retrier {
	if policy.MaxElapsed == 0 {
		policy.MaxElapsed = DefaultMaxElapsed
	}
	if policy.MaxAttempts < 0 {
		policy.MaxAttempts = DefaultMaxAttempts
	}
	if policy.InitialBackoff <= 0 {
		policy.InitialBackoff = DefaultInitialBackoff
	}
	if policy.MaxBackoff <= 0 {
		policy.MaxBackoff = DefaultMaxBackoff
	}
	return &retrier{policy: policy}
}

// enabled reports whether the policy allows any retry.
func (r *retrier) enabled() bool { return r.policy.MaxAttempts != 1 }

// retryStreak is what a call has spent of its retry budget since it last
// made progress: its failed attempts and when the first of them failed. The
// zero value is a call that has not failed yet.
type retryStreak struct {
	failures int       // failed attempts since the last progress
	first    time.Time // when the first of them failed
}

// reset starts the budget afresh: the call made progress.
func (s *retryStreak) reset() { *s = retryStreak{} }

// retryCall runs fn until it succeeds, fails with an error that is not
// retried, or the retry budget or ctx's deadline runs out; it returns fn's
// last error.
func retryCall[T any](ctx context.Context, r *retrier, procedure string, fn func(context.Context) (T, error)) (T, error) {
	var streak retryStreak
	for {
		res, err := fn(ctx)
		if err == nil || !r.wait(ctx, procedure, &streak, err) {
			return res, err
		}
	}
}

// wait records the failed attempt of procedure in streak and decides
// whether it is retried; if so it reports the retry, sleeps its backoff and
// returns true. It returns false (at once, or when ctx ends during the
// delay) when the error is not retried, the attempts or MaxElapsed are
// spent, or the delay would end past ctx's deadline.
func (r *retrier) wait(ctx context.Context, procedure string, streak *retryStreak, err error) bool {
	return retryable(ctx, err) && r.pause(ctx, procedure, streak, err)
}

// pause is wait for an error the caller found retryable: it records the
// failure, checks the attempts, MaxElapsed and the deadline, reports the
// retry and sleeps its backoff.
func (r *retrier) pause(ctx context.Context, procedure string, streak *retryStreak, err error) bool {
	now := time.Now()
	if streak.failures == 0 {
		streak.first = now
	}
	streak.failures++
	attempt := streak.failures // the attempt that failed (from 1)
	if (r.policy.MaxAttempts > 0 && attempt >= r.policy.MaxAttempts) || ctx.Err() != nil {
		return false
	}
	delay := r.backoff(attempt - 1)
	elapsed := now.Add(delay).Sub(streak.first)
	if r.policy.MaxElapsed > 0 && elapsed > r.policy.MaxElapsed {
		return false
	}
	if deadline, ok := ctx.Deadline(); ok && now.Add(delay).After(deadline) {
		return false
	}
	code := connect.CodeOf(err)
	r.retries.Add(1)
	slog.DebugContext(ctx, "agentd: retrying", "procedure", procedure, "attempt", attempt+1, "delay", delay, "elapsed", elapsed, "code", code.String(), "error", err.Error())
	if r.policy.OnRetry != nil {
		r.policy.OnRetry(RetryEvent{Procedure: procedure, Attempt: attempt + 1, Delay: delay, Elapsed: elapsed, Code: code, Err: err})
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// backoff returns the full-jitter delay before retry n (from 0).
func (r *retrier) backoff(n int) time.Duration {
	bound := r.policy.MaxBackoff
	if n < 31 {
		if b := r.policy.InitialBackoff << n; b > 0 && b < bound {
			bound = b
		}
	}
	return rand.N(bound + 1)
}

// tlsRefusal reports whether err is a TLS handshake that cannot succeed on a
// retry: the server's certificate failed verification, the server answered
// TLS with something else, or it refused the client's certificate (a TLS
// alert from the peer, e.g. "certificate required" or "unknown certificate
// authority"). Such a failure is returned at once, not retried for
// MaxElapsed.
func tlsRefusal(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	if errors.As(err, &verify) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &record) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// errStreamEnded marks a stream that ended before the TurnEnd or output it
// was waiting for; it is retried like a reset connection.
var errStreamEnded = errors.New("agentd: the stream ended before the output it was waiting for")

// retryable reports whether err may be retried: connect.CodeUnavailable, a
// stream that ended early, or a transport failure (connect's codes for a
// reset or closed connection, not a status the server sent) while ctx is
// still live. The caller's cancellation and deadline are never retried.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, errStreamEnded) {
		return true
	}
	if tlsRefusal(err) {
		return false
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable:
		return true
	case connect.CodeCanceled, connect.CodeUnknown, connect.CodeInternal:
		return !connect.IsWireError(err)
	}
	return false
}
