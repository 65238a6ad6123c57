package agentd_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// tlsAddr returns host:port of an agentd serving TLS with the test PKI's
// server certificate, with --auth-tokens.
func tlsAddr(t *testing.T) string {
	t.Helper()
	pki := testCerts(t)
	return namedServerAddr(t, "tls", func() ([]string, error) {
		return []string{"--auth-tokens", pki.tokensFile, "--tls-cert", pki.serverCert, "--tls-key", pki.serverKey}, nil
	})
}

// mtlsAddr returns host:port of an agentd serving mutual TLS (client
// certificates signed by the test CA) and no other authentication, so the
// client certificate is the principal.
func mtlsAddr(t *testing.T) string {
	t.Helper()
	pki := testCerts(t)
	return namedServerAddr(t, "mtls", func() ([]string, error) {
		return []string{"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--tls-client-ca", pki.caFile}, nil
	})
}

// tlsConfig is TLSConfigFromFiles with the test CA and client certificate
// client ("" for none).
func tlsConfig(t *testing.T, client string) *tls.Config {
	t.Helper()
	pki := testCerts(t)
	certFile, keyFile := "", ""
	if client != "" {
		certFile, keyFile = pki.clientCert(t, client)
	}
	cfg, err := agentd.TLSConfigFromFiles(pki.caFile, certFile, keyFile)
	if err != nil {
		t.Fatalf("TLSConfigFromFiles: %v", err)
	}
	return cfg
}

// protocols are the client protocols every TLS test runs with.
var protocols = []struct {
	name string
	opt  agentd.Option
}{{"grpc", agentd.WithGRPC()}, {"connect", agentd.WithConnectProtocol()}, {"grpc-web", agentd.WithGRPCWeb()}}

func TestTwoTurnChatOverTLS(t *testing.T) {
	ctx := testContext(t)
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			client := agentd.NewClient("https://"+tlsAddr(t), proto.opt,
				agentd.WithTLS(tlsConfig(t, "")), agentd.WithBearerToken(tokenAlice))
			out := twoTurnChat(t, ctx, client)
			if _, err := client.GetSnapshot(ctx, "assistant", out.GetSnapshotId()); err != nil {
				t.Errorf("GetSnapshot over TLS: %v", err)
			}
		})
	}
}

func TestTLSServerStillRequiresTheToken(t *testing.T) {
	client := agentd.NewClient("https://"+tlsAddr(t), agentd.WithTLS(tlsConfig(t, "")))
	_, err := client.RunText(testContext(t), "assistant", agentd.ChatOptions{}, "hi")
	assertCode(t, err, connect.CodeUnauthenticated)
}

func TestTLSWithoutTheServersCAIsRefusedByTheClient(t *testing.T) {
	// No WithTLS: the system roots, which do not include the test CA.
	client := agentd.NewClient("https://"+tlsAddr(t), agentd.WithBearerToken(tokenAlice))
	_, err := client.RunText(testContext(t), "assistant", agentd.ChatOptions{}, "hi")
	assertCode(t, err, connect.CodeUnavailable)
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("err = %v, want a certificate verification error", err)
	}
	assertNoSecret(t, err, tokenAlice)
}

func TestWithTLSRefusesToSendInCleartext(t *testing.T) {
	ctx := testContext(t)
	// Nothing listens there: the client refuses before connecting.
	const addr = "127.0.0.1:9"
	client := agentd.NewClient("http://"+addr, agentd.WithTLS(tlsConfig(t, "")), agentd.WithBearerToken(tokenAlice))
	_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
	assertCode(t, err, connect.CodeInvalidArgument)
	if !strings.Contains(err.Error(), "https://") {
		t.Errorf("err = %v, want it to ask for an https:// base URL", err)
	}
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	assertCode(t, firstTurnErr(ctx, conv, "hi"), connect.CodeInvalidArgument)

	both := agentd.NewClient("https://"+addr, agentd.WithTLS(tlsConfig(t, "")), agentd.WithHTTPClient(http.DefaultClient))
	_, err = both.ListAgents(ctx)
	assertCode(t, err, connect.CodeInvalidArgument)
}

// assertRefusedByHandshake fails unless err is the transport error of a
// connection the server closed during the TLS handshake, not a status the
// server sent. connect-go reports the TLS alert ("remote error: tls:
// certificate required", the usual case) or a connection that could not be
// set up ("http2: client conn could not be established") as
// CodeUnavailable; when the client's first write already hits the closed
// connection (with TLS 1.3 the client finishes its side of the handshake
// first) it reports the broken pipe or reset as CodeCanceled.
func assertRefusedByHandshake(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded, want the TLS handshake refused")
	}
	t.Logf("refused: %v", err)
	switch code := connect.CodeOf(err); {
	case code == connect.CodeUnavailable:
	case code == connect.CodeCanceled && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)):
	default:
		t.Fatalf("err = %v (code %v), want the TLS alert as unavailable or a broken connection as canceled", err, code)
	}
}

func TestMutualTLSWithoutAClientCertificateIsRefused(t *testing.T) {
	ctx := testContext(t)
	for _, c := range []struct{ name, client string }{
		{"no certificate", ""},
		{"certificate of another CA", "mallory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := agentd.NewClient("https://"+mtlsAddr(t), agentd.WithTLS(tlsConfig(t, c.client)))
			_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
			assertRefusedByHandshake(t, err)
			conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
			assertRefusedByHandshake(t, firstTurnErr(ctx, conv, "hi"))
		})
	}
}

func TestMutualTLSClientCertificateIsThePrincipal(t *testing.T) {
	ctx := testContext(t)
	client := func(t *testing.T, name string, opts ...agentd.Option) *agentd.Client {
		return agentd.NewClient("https://"+mtlsAddr(t), append([]agentd.Option{agentd.WithTLS(tlsConfig(t, name))}, opts...)...)
	}
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			alice := client(t, "alice", proto.opt)
			out := twoTurnChat(t, ctx, alice)

			// The tenant is the certificate's O: carol (tenant-b) cannot
			// reach alice's session; alex (tenant-a) can.
			assertSessionOfOtherTenantIsNotFound(t, ctx, client(t, "carol", proto.opt), out)
			assertSessionUnchanged(t, ctx, alice, out)
			snap, err := client(t, "alex", proto.opt).GetLatestSnapshot(ctx, "assistant", out.GetSessionId())
			if err != nil {
				t.Fatalf("alex (same O) GetLatestSnapshot: %v", err)
			}
			if snap.GetSnapshotId() != out.GetSnapshotId() {
				t.Errorf("alex reads snapshot %s, want %s", snap.GetSnapshotId(), out.GetSnapshotId())
			}
		})
	}
}

func TestMutualTLSCertificateWithoutOrganizationUsesTheCommonNameAsTenant(t *testing.T) {
	ctx := testContext(t)
	dave := agentd.NewClient("https://"+mtlsAddr(t), agentd.WithTLS(tlsConfig(t, "dave"))) // CN=dave, no O
	out := twoTurnChat(t, ctx, dave)
	// erin's certificate has O=dave: the same tenant.
	erin := agentd.NewClient("https://"+mtlsAddr(t), agentd.WithTLS(tlsConfig(t, "erin")))
	if _, err := erin.GetSnapshot(ctx, "assistant", out.GetSnapshotId()); err != nil {
		t.Errorf("erin (O=dave) GetSnapshot of dave's (CN=dave) session: %v", err)
	}
	alice := agentd.NewClient("https://"+mtlsAddr(t), agentd.WithTLS(tlsConfig(t, "alice")))
	_, err := alice.GetSnapshot(ctx, "assistant", out.GetSnapshotId())
	assertCode(t, err, connect.CodeNotFound)
}
