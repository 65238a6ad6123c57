package agentd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
)

func TestH2CClientClosesIdleConnectionsLikeTheDefaultTransport(t *testing.T) {
	transport, ok := NewH2CClient().Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport = %T, want *http.Transport", NewH2CClient().Transport)
	}
	want := http.DefaultTransport.(*http.Transport).IdleConnTimeout
	if transport.IdleConnTimeout != want || want == 0 {
		t.Errorf("IdleConnTimeout = %v, want http.DefaultTransport's %v (0 keeps idle connections forever)", transport.IdleConnTimeout, want)
	}
}

// transportOf returns the *http.Transport of a Client's default HTTP client.
func transportOf(t *testing.T, c connect.HTTPClient) *http.Transport {
	t.Helper()
	hc, ok := c.(*http.Client)
	if !ok {
		t.Fatalf("HTTP client = %T %v, want the default *http.Client", c, c)
	}
	transport, ok := hc.Transport.(*http.Transport)
	if !ok || transport.HTTP2 == nil {
		t.Fatalf("transport = %T, want an *http.Transport with an HTTP2 config", hc.Transport)
	}
	return transport
}

func TestKeepaliveDefaultsAreAPingAfter30sAnsweredWithin20s(t *testing.T) {
	// The documented defaults (docs/client-go.md, WithKeepalive), written out
	// here rather than taken from the constants.
	const interval, timeout = 30 * time.Second, 20 * time.Second
	clients := map[string]connect.HTTPClient{
		"NewH2CClient":           NewH2CClient(),
		"NewClient http://":      (&clientConfig{}).httpClientFor("http://127.0.0.1:1"),
		"NewClient https://":     (&clientConfig{}).httpClientFor("https://127.0.0.1:1"),
		"NewClient with WithTLS": configOf(WithTLS(nil)).httpClientFor("https://127.0.0.1:1"),
		"WithKeepalive(0, 0)":    configOf(WithKeepalive(0, 0)).httpClientFor("http://127.0.0.1:1"),
	}
	for name, c := range clients {
		h2 := transportOf(t, c).HTTP2
		if h2.SendPingTimeout != interval || h2.PingTimeout != timeout {
			t.Errorf("%s: PING after %v idle, answered within %v; want %v and %v", name, h2.SendPingTimeout, h2.PingTimeout, interval, timeout)
		}
	}
	if DefaultKeepaliveInterval != interval || DefaultKeepaliveTimeout != timeout {
		t.Errorf("DefaultKeepaliveInterval, DefaultKeepaliveTimeout = %v, %v; want %v, %v", DefaultKeepaliveInterval, DefaultKeepaliveTimeout, interval, timeout)
	}
}

func TestKeepaliveOptionSetsTheTransportsPings(t *testing.T) {
	cases := []struct {
		name              string
		interval, timeout time.Duration
		wantSend, wantAck time.Duration
	}{
		{"both set", 200 * time.Millisecond, time.Second, 200 * time.Millisecond, time.Second},
		{"zero interval: its default", 0, 5 * time.Second, 30 * time.Second, 5 * time.Second},
		{"zero timeout: its default", time.Minute, 0, time.Minute, 20 * time.Second},
		{"negative interval: no PINGs", -1, 5 * time.Second, 0, 0},
		{"negative interval, negative timeout: no PINGs", -1, -1, 0, 0},
	}
	for _, tc := range cases {
		for _, url := range []string{"http://127.0.0.1:1", "https://127.0.0.1:1"} {
			h2 := transportOf(t, configOf(WithKeepalive(tc.interval, tc.timeout)).httpClientFor(url)).HTTP2
			if h2.SendPingTimeout != tc.wantSend || h2.PingTimeout != tc.wantAck {
				t.Errorf("%s, %s: SendPingTimeout %v, PingTimeout %v; want %v, %v", tc.name, url, h2.SendPingTimeout, h2.PingTimeout, tc.wantSend, tc.wantAck)
			}
		}
	}
}

func TestKeepaliveOptionRejectsANegativeTimeoutAndAnOwnHTTPClient(t *testing.T) {
	cases := map[string][]Option{
		"negative timeout":                   {WithKeepalive(time.Second, -time.Second)},
		"negative timeout, default interval": {WithKeepalive(0, -1)},
		"with WithHTTPClient":                {WithKeepalive(time.Second, time.Second), WithHTTPClient(http.DefaultClient)},
	}
	for name, opts := range cases {
		_, err := NewClient("http://127.0.0.1:1", opts...).ListAgents(context.Background())
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "WithKeepalive") {
			t.Errorf("%s: ListAgents error %v, want invalid_argument naming WithKeepalive", name, err)
		}
	}
}

func TestKeepaliveLostConnectionIsUnavailableOtherErrorsUntouched(t *testing.T) {
	lost := errors.New("http2: client connection lost")
	// What connect-go makes of it while reading a response body, and before a response.
	for _, err := range []error{
		connect.NewError(connect.CodeInternal, fmt.Errorf("protocol error: incomplete envelope: %w", lost)),
		connect.NewError(connect.CodeUnavailable, lost),
	} {
		got := lostConnection(err)
		if connect.CodeOf(got) != connect.CodeUnavailable || !errors.Is(got, lost) || !strings.Contains(got.Error(), "keepalive PING") {
			t.Errorf("lostConnection(%v) = %v (code %v), want unavailable naming the PING, wrapping %v", err, got, connect.CodeOf(got), lost)
		}
	}
	fromServer := connect.NewWireError(connect.CodeInternal, lost)
	others := []error{nil, io.EOF, fromServer, connect.NewError(connect.CodeUnknown, errors.New("connection reset by peer"))}
	for _, err := range others {
		if got := lostConnection(err); got != err {
			t.Errorf("lostConnection(%v) = %v, want it unchanged", err, got)
		}
	}
}

// configOf applies opts to a new clientConfig.
func configOf(opts ...Option) *clientConfig {
	cfg := &clientConfig{}
	for _, opt := range opts {
		opt(cfg)
	}
	return cfg
}
