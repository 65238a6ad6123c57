package agentd

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"
)

// Option configures a Client built by NewClient.
type Option func(*clientConfig)

// clientConfig collects the options of NewClient.
type clientConfig struct {
	httpClient connect.HTTPClient
	protocol   connect.ClientOption
	extra      []connect.ClientOption
	tls        *tls.Config // set by WithTLS
	token      TokenSource // set by WithBearerToken or WithTokenSource
	retry      RetryPolicy // set by WithRetry or WithoutRetry
	keepalive  *keepalive  // set by WithKeepalive
}

// WithHTTPClient makes the client send its requests with c instead of the
// default cleartext HTTP/2 (h2c) client. Bidi Chat needs HTTP/2 end to end;
// use an http.Client whose transport speaks HTTP/2 (TLS or h2c). It cannot be
// combined with WithTLS or WithKeepalive: configure TLS and HTTP/2 PINGs on
// c's transport instead (every call of a client given both fails with
// connect.CodeInvalidArgument). The client then sends only the PINGs c's
// transport sends (an http.Transport: none unless its HTTP2 field sets
// SendPingTimeout), so a call whose server vanished may wait until TCP gives
// up on the connection.
func WithHTTPClient(c connect.HTTPClient) Option {
	return func(cfg *clientConfig) { cfg.httpClient = c }
}

// WithGRPC selects the gRPC protocol. It is the default.
func WithGRPC() Option {
	return func(cfg *clientConfig) { cfg.protocol = connect.WithGRPC() }
}

// WithConnectProtocol selects the Connect protocol (binary Protobuf). Unary
// and server-streaming calls then also work over HTTP/1.1; bidi Chat still
// needs HTTP/2.
func WithConnectProtocol() Option {
	return func(cfg *clientConfig) { cfg.protocol = nil }
}

// WithGRPCWeb selects the gRPC-Web protocol. Bidi Chat still needs HTTP/2.
func WithGRPCWeb() Option {
	return func(cfg *clientConfig) { cfg.protocol = connect.WithGRPCWeb() }
}

// WithClientOptions passes extra connect-go options (interceptors, codecs,
// compression, read limits, ...) to the generated client.
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(cfg *clientConfig) { cfg.extra = append(cfg.extra, opts...) }
}

// WithInterceptors adds connect-go interceptors to every call of the client,
// unary and streaming (bidi Chat included); it is
// WithClientOptions(connect.WithInterceptors(interceptors...)). They run
// inside the client's own bearer-token interceptor, in the order given (the
// first is the outermost). For OpenTelemetry tracing pass
// otelconnect.NewInterceptor() (connectrpc.com/otelconnect): each call then
// gets a client span and carries the W3C traceparent header of the caller's
// context to agentd.
func WithInterceptors(interceptors ...connect.Interceptor) Option {
	return WithClientOptions(connect.WithInterceptors(interceptors...))
}

// idleConnTimeout is how long NewH2CClient keeps an unused connection, the
// value http.DefaultTransport uses.
const idleConnTimeout = 90 * time.Second

// NewH2CClient returns an http.Client that speaks HTTP/2 over cleartext TCP
// (prior knowledge, no TLS, no upgrade) for "http://" URLs and ordinary
// HTTP/2 over TLS for "https://" URLs. It is the default transport of
// NewClient, so bidi Chat works against a plaintext agentd. Like
// http.DefaultTransport it closes connections idle for 90 seconds, so a
// Client that is dropped does not keep its connection open forever. It sends
// an HTTP/2 PING on a connection that received nothing for 30 seconds
// (DefaultKeepaliveInterval) and closes the connection when the PING is not
// answered within 20 seconds (DefaultKeepaliveTimeout), so a call whose
// server vanished fails instead of waiting forever (see WithKeepalive).
func NewH2CClient() *http.Client { return newHTTP2Client(nil, defaultKeepalive) }

// newHTTP2Client is NewH2CClient with TLS settings for "https://" URLs: a
// clone of tlsConfig (nil: the system roots), TLS 1.2 at least, and the
// keepalive ka, which applies to h2c and TLS connections alike. The
// transport offers "h2" by ALPN, which gRPC (and bidi Chat) needs.
func newHTTP2Client(tlsConfig *tls.Config, ka keepalive) *http.Client {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	protocols.SetHTTP2(true)
	cfg := &tls.Config{}
	if tlsConfig != nil {
		cfg = tlsConfig.Clone()
	}
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return &http.Client{Transport: &http.Transport{
		Protocols:         &protocols,
		DialContext:       (&net.Dialer{}).DialContext,
		TLSClientConfig:   cfg,
		ForceAttemptHTTP2: true,
		IdleConnTimeout:   idleConnTimeout,
		// SendPingTimeout 0 sends no PINGs (PingTimeout is then unused).
		HTTP2: &http.HTTP2Config{SendPingTimeout: ka.interval, PingTimeout: ka.timeout},
	}}
}
