package agentd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
)

// The defaults of WithKeepalive: the values of the default transport (and of
// NewH2CClient), the same as agentd's own --keepalive-interval-ms and
// --keepalive-timeout-ms.
const (
	// DefaultKeepaliveInterval is how long a connection may receive nothing
	// before the client sends an HTTP/2 PING on it.
	DefaultKeepaliveInterval = 30 * time.Second
	// DefaultKeepaliveTimeout is how long the client waits for the answer to
	// that PING before it closes the connection.
	DefaultKeepaliveTimeout = 20 * time.Second
)

// keepalive is the PING setting of the default transport.
type keepalive struct {
	interval time.Duration // 0: no PINGs
	timeout  time.Duration
}

// defaultKeepalive is the setting without WithKeepalive.
var defaultKeepalive = keepalive{interval: DefaultKeepaliveInterval, timeout: DefaultKeepaliveTimeout}

// WithKeepalive sets the HTTP/2 keepalive of the client's default transport
// (h2c and TLS alike). When a connection has received no HTTP/2 frame (no
// response data, PING, SETTINGS, ...) for interval, the client sends an
// HTTP/2 PING on it; when that PING is not answered within timeout, the
// client closes the connection, and every call on it fails with
// connect.CodeUnavailable, which the retry policy retries (see RetryPolicy).
// This is how a call whose server vanished without closing the connection (a
// crashed host, a dropped network path: no FIN, no RST) fails instead of
// waiting forever. A live server answers PINGs by itself, so a call that is
// merely quiet (a long turn, a silent stream) is never cut. An idle
// connection (no call open) is pinged too, until the transport closes it
// after 90 seconds unused.
//
// Without this option the client uses DefaultKeepaliveInterval (30 s) and
// DefaultKeepaliveTimeout (20 s). A zero interval or timeout takes its
// default; a negative interval turns the PINGs off (the timeout is then
// ignored): a call whose server vanished then waits until its context ends
// (a Chat included: see Client.Chat) or TCP gives up on the connection
// (minutes, if ever). A negative timeout with PINGs on is a mistake: every
// call of the client fails with connect.CodeInvalidArgument, nothing is
// sent. The last WithKeepalive wins.
//
// It configures the client's own transport only, so it cannot be combined
// with WithHTTPClient (every call of a client given both fails with
// connect.CodeInvalidArgument). A client given WithHTTPClient keeps that
// http.Client's own keepalive settings: an http.Transport sends no PINGs
// unless its HTTP2 field sets SendPingTimeout (and PingTimeout).
func WithKeepalive(interval, timeout time.Duration) Option {
	return func(cfg *clientConfig) {
		ka := keepalive{} // a negative interval: no PINGs
		if interval >= 0 {
			ka = keepalive{interval: cmp.Or(interval, DefaultKeepaliveInterval), timeout: cmp.Or(timeout, DefaultKeepaliveTimeout)}
		}
		cfg.keepalive = &ka
	}
}

// validate returns why the setting cannot be used, or nil.
func (k keepalive) validate() error {
	if k.interval > 0 && k.timeout < 0 {
		return fmt.Errorf("agentd: WithKeepalive timeout %v is negative: use 0 for the default (%v) or a positive duration", k.timeout, DefaultKeepaliveTimeout)
	}
	return nil
}

// lostConnectionText is the text of the error net/http's HTTP/2 client gives
// the calls of a connection it closed because a keepalive PING went
// unanswered. It has no exported error value, so the text is matched (as
// connect-go matches HTTP/2 stream errors).
const lostConnectionText = "http2: client connection lost"

// lostConnection turns the error of a call whose connection was closed for
// an unanswered PING into connect.CodeUnavailable with one message:
// connect-go reports it as CodeUnavailable before the response began, but
// as CodeInternal ("protocol error: incomplete envelope") or CodeUnknown
// once it had, which reads like a server bug. Every other error, and any
// status the server sent, is returned as it is.
func lostConnection(err error) error {
	if err == nil || connect.IsWireError(err) {
		return err
	}
	for cause := err; cause != nil; cause = errors.Unwrap(cause) {
		if cause.Error() == lostConnectionText {
			return connect.NewError(connect.CodeUnavailable,
				fmt.Errorf("agentd: connection lost: a keepalive PING was not answered in time (the server or the network path is gone): %w", cause))
		}
	}
	return err
}

// lostConnectionInterceptor applies lostConnection to every call: it is the
// innermost interceptor, so the caller's interceptors see the code too.
type lostConnectionInterceptor struct{}

func (lostConnectionInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		return res, lostConnection(err)
	}
}

func (lostConnectionInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		return lostConnectionConn{next(ctx, spec)}
	}
}

func (lostConnectionInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// lostConnectionConn is a client stream whose sends and receives go through
// lostConnection.
type lostConnectionConn struct{ connect.StreamingClientConn }

func (c lostConnectionConn) Send(msg any) error {
	return lostConnection(c.StreamingClientConn.Send(msg))
}

func (c lostConnectionConn) Receive(msg any) error {
	return lostConnection(c.StreamingClientConn.Receive(msg))
}
