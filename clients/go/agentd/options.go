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
}

// WithHTTPClient makes the client send its requests with c instead of the
// default cleartext HTTP/2 (h2c) client. Bidi Chat needs HTTP/2 end to end;
// use an http.Client whose transport speaks HTTP/2 (TLS or h2c).
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

// idleConnTimeout is how long NewH2CClient keeps an unused connection, the
// value http.DefaultTransport uses.
const idleConnTimeout = 90 * time.Second

// NewH2CClient returns an http.Client that speaks HTTP/2 over cleartext TCP
// (prior knowledge, no TLS, no upgrade) for "http://" URLs and ordinary
// HTTP/2 over TLS for "https://" URLs. It is the default transport of
// NewClient, so bidi Chat works against a plaintext agentd. Like
// http.DefaultTransport it closes connections idle for 90 seconds, so a
// Client that is dropped does not keep its connection open forever.
func NewH2CClient() *http.Client {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	protocols.SetHTTP2(true)
	return &http.Client{Transport: &http.Transport{
		Protocols:         &protocols,
		DialContext:       (&net.Dialer{}).DialContext,
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		IdleConnTimeout:   idleConnTimeout,
	}}
}
