package agentd_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	"github.com/agentd-dev/agentd/gen/go/agentd/v1/agentdv1connect"
)

// headerRecorder is an HTTP/2-over-TLS server of AgentService whose methods
// are all unimplemented; it records each request's authorization header and
// ALPN protocol by path.
type headerRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth map[string]string
	alpn map[string]string
}

func newHeaderRecorder(t *testing.T) *headerRecorder {
	t.Helper()
	r := &headerRecorder{auth: map[string]string{}, alpn: map[string]string{}}
	path, handler := agentdv1connect.NewAgentServiceHandler(agentdv1connect.UnimplementedAgentServiceHandler{})
	mux := http.NewServeMux()
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth[req.URL.Path] = req.Header.Get("Authorization")
		if req.TLS != nil {
			r.alpn[req.URL.Path] = req.TLS.NegotiatedProtocol
		}
		r.mu.Unlock()
		handler.ServeHTTP(w, req)
	}))
	r.srv = httptest.NewUnstartedServer(mux)
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

// tlsConfig trusts the recorder's certificate.
func (r *headerRecorder) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(r.srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

func (r *headerRecorder) get(method string) (auth, alpn string, seen bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := "/agentd.v1.AgentService/" + method
	auth, seen = r.auth[path]
	return auth, r.alpn[path], seen
}

func TestBearerTokenIsSentWithUnaryAndStreamingCallsOverTLS(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			rec := newHeaderRecorder(t)
			ctx := testContext(t)
			client := agentd.NewClient(rec.srv.URL, proto.opt, agentd.WithTLS(rec.tlsConfig()), agentd.WithBearerToken("tok-unit-1"))

			_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
			assertCode(t, err, connect.CodeUnimplemented)
			assertCode(t, watchErr(ctx, client, "s"), connect.CodeUnimplemented)
			conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
			assertCode(t, firstTurnErr(ctx, conv, "hi"), connect.CodeUnimplemented)

			for _, method := range []string{"Run", "WatchSnapshot", "Chat"} {
				auth, alpn, seen := rec.get(method)
				if !seen {
					t.Errorf("%s did not reach the server", method)
					continue
				}
				if auth != "Bearer tok-unit-1" {
					t.Errorf("%s authorization = %q, want \"Bearer tok-unit-1\"", method, auth)
				}
				if alpn != "h2" {
					t.Errorf("%s ALPN protocol = %q, want h2", method, alpn)
				}
			}
		})
	}
}

func TestNoTokenOptionSendsNoAuthorizationHeader(t *testing.T) {
	rec := newHeaderRecorder(t)
	_, err := agentd.NewClient(rec.srv.URL, agentd.WithTLS(rec.tlsConfig())).ListAgents(testContext(t))
	assertCode(t, err, connect.CodeUnimplemented)
	if auth, _, seen := rec.get("ListAgents"); !seen || auth != "" {
		t.Errorf("ListAgents: seen %v, authorization %q, want seen and none", seen, auth)
	}
}

func TestTokensThatAreNotHeaderSafeAreRefusedWithoutEchoingThem(t *testing.T) {
	rec := newHeaderRecorder(t)
	const bad = "tok-secret\r\nx-evil: 1"
	_, err := agentd.NewClient(rec.srv.URL, agentd.WithTLS(rec.tlsConfig()), agentd.WithBearerToken(bad)).ListAgents(testContext(t))
	assertCode(t, err, connect.CodeUnauthenticated)
	assertNoSecret(t, err, "tok-secret")
	if _, _, seen := rec.get("ListAgents"); seen {
		t.Error("the call reached the server")
	}
}

func TestTLSConfigFromFilesLoadsTheCAAndTheClientCertificate(t *testing.T) {
	pki := testCerts(t)
	cert, key := pki.clientCert(t, "alice")
	cfg, err := agentd.TLSConfigFromFiles(pki.caFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.MinVersion < tls.VersionTLS12 {
		t.Errorf("config: RootCAs %v, %d certificates, MinVersion %x", cfg.RootCAs != nil, len(cfg.Certificates), cfg.MinVersion)
	}
	cfg, err = agentd.TLSConfigFromFiles("", "", "")
	if err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf(`TLSConfigFromFiles("", "", "") = %v, %v; want the system roots and no certificate`, cfg, err)
	}
}

func TestTLSConfigFromFilesReportsBadFiles(t *testing.T) {
	pki := testCerts(t)
	cert, key := pki.clientCert(t, "alice")
	otherCert, _ := pki.clientCert(t, "carol")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, ca, cert, key, want string }{
		{"missing CA file", filepath.Join(t.TempDir(), "none.pem"), "", "", "read CA file"},
		{"CA file without PEM", notPEM, "", "", "no PEM certificate"},
		{"certificate without key", pki.caFile, cert, "", "both certFile and keyFile"},
		{"key without certificate", pki.caFile, "", key, "both certFile and keyFile"},
		{"key of another certificate", pki.caFile, otherCert, key, "load client certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := agentd.TLSConfigFromFiles(c.ca, c.cert, c.key)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), strings.TrimSpace(string(keyPEM))[40:80]) {
				t.Errorf("err %q contains key material", err)
			}
		})
	}
}
