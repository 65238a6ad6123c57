package agentd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"connectrpc.com/connect"
)

// TokenSource returns the bearer token of one call. It is called once per
// RPC (unary or streaming) with the call's context, so it may refresh or
// rotate tokens; it must be safe for concurrent use. An error fails the call
// before anything is sent: a *connect.Error keeps its code, any other error
// becomes connect.CodeUnauthenticated wrapping it.
type TokenSource func(ctx context.Context) (string, error)

// WithBearerToken sends token as "authorization: Bearer <token>" with every
// call (unary and streaming), as agentd's --auth-tokens and JWT
// authentication expect. An empty token fails every call with
// connect.CodeUnauthenticated without contacting the server. The token is
// never part of an error message. Over an "http://" base URL it travels in
// cleartext: use TLS (an "https://" base URL, WithTLS) beyond loopback.
// It replaces an earlier WithBearerToken or WithTokenSource.
func WithBearerToken(token string) Option {
	return WithTokenSource(func(context.Context) (string, error) { return token, nil })
}

// WithTokenSource is WithBearerToken with a token obtained per call from
// source (see TokenSource). It replaces an earlier WithBearerToken or
// WithTokenSource; a nil source sends no token.
func WithTokenSource(source TokenSource) Option {
	return func(cfg *clientConfig) { cfg.token = source }
}

// WithTLS makes the default transport use config for "https://" base URLs:
// the CA to trust (RootCAs), a client certificate for mutual TLS
// (Certificates or GetClientCertificate), the expected server name
// (ServerName), and so on. The config is cloned; TLS 1.2 is the minimum and
// "h2" is offered by ALPN, so the gRPC protocol and bidi Chat work over TLS,
// as does the Connect protocol. A nil config means the system roots, as for
// any "https://" base URL without WithTLS. See TLSConfigFromFiles.
//
// The base URL must start with "https://": with WithTLS, every call of a
// client whose base URL is "http://" fails with connect.CodeInvalidArgument
// (rather than silently sending in cleartext). WithTLS cannot be combined
// with WithHTTPClient.
func WithTLS(config *tls.Config) Option {
	return func(cfg *clientConfig) {
		if config == nil {
			config = &tls.Config{}
		}
		cfg.tls = config
	}
}

// TLSConfigFromFiles builds a TLS client config from PEM files: caFile is the
// CA bundle that signs the server's certificate ("" = the system roots);
// certFile and keyFile are the client certificate and its private key for
// mutual TLS (both "" for none, otherwise both required). Set ServerName on
// the result when the base URL's host is not a name or address in the
// server's certificate.
func TLSConfigFromFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("agentd: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("agentd: no PEM certificate in CA file %s", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("agentd: a client certificate needs both certFile and keyFile")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			// tls errors name neither the key's bytes nor its file: say which files.
			return nil, fmt.Errorf("agentd: load client certificate %s and key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// tokenInterceptor sets the authorization header of every call from source.
type tokenInterceptor struct{ source TokenSource }

// header returns the authorization header value of one call.
func (i tokenInterceptor) header(ctx context.Context) (string, error) {
	token, err := i.source(ctx)
	if err != nil {
		var cerr *connect.Error
		if errors.As(err, &cerr) {
			return "", err
		}
		return "", connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("agentd: token source: %w", err))
	}
	if token == "" {
		return "", connect.NewError(connect.CodeUnauthenticated, errors.New("agentd: empty bearer token"))
	}
	for i := 0; i < len(token); i++ {
		// Visible ASCII only: anything else is not a valid header value
		// (and is not quoted here, so the token never reaches an error).
		if token[i] <= ' ' || token[i] >= 0x7f {
			return "", connect.NewError(connect.CodeUnauthenticated, errors.New("agentd: the bearer token has a character that is not visible ASCII"))
		}
	}
	return "Bearer " + token, nil
}

func (i tokenInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		value, err := i.header(ctx)
		if err != nil {
			return nil, err
		}
		req.Header().Set("Authorization", value)
		return next(ctx, req)
	}
}

func (i tokenInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		value, err := i.header(ctx)
		if err != nil {
			return failedConn{StreamingClientConn: conn, err: err}
		}
		conn.RequestHeader().Set("Authorization", value)
		return conn
	}
}

func (i tokenInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// failedConn is a stream that failed before sending anything: every send
// and receive returns err, and nothing reaches the server.
type failedConn struct {
	connect.StreamingClientConn
	err error
}

func (c failedConn) Send(any) error               { return c.err }
func (c failedConn) Receive(any) error            { return c.err }
func (c failedConn) CloseRequest() error          { return nil }
func (c failedConn) CloseResponse() error         { return nil }
func (c failedConn) ResponseHeader() http.Header  { return http.Header{} }
func (c failedConn) ResponseTrailer() http.Header { return http.Header{} }

// misconfiguredClient is the HTTP client of a Client whose options conflict:
// every call fails with err, nothing is sent.
type misconfiguredClient struct{ err error }

func (c misconfiguredClient) Do(*http.Request) (*http.Response, error) { return nil, c.err }
