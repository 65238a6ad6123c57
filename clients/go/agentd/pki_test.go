package agentd_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Bearer tokens of the --auth-tokens file the auth servers use: alice and
// alice2 are two subjects of tenant-a, bob is tenant-b.
const (
	tokenAlice  = "tok-alice-6f1c2a8e40b79d13c5f2"
	tokenAlice2 = "tok-alice2-90bd4e17a6c3f28e05d1"
	tokenBob    = "tok-bob-3e7d55c0a9142fb86e7a"
)

// testPKI is a throw-away CA, a server certificate for 127.0.0.1/localhost,
// client certificates and a tokens file, written to a temporary directory
// when first needed (never committed) and removed by TestMain.
type testPKI struct {
	dir        string
	caFile     string
	serverCert string
	serverKey  string
	tokensFile string
	// clients holds a certificate/key file pair per name (see newTestPKI).
	clients map[string][2]string
}

var (
	pkiOnce sync.Once
	pki     *testPKI
	pkiErr  error
)

// testCerts returns the shared test PKI, creating it on first use.
func testCerts(t *testing.T) *testPKI {
	t.Helper()
	pkiOnce.Do(func() { pki, pkiErr = newTestPKI() })
	if pkiErr != nil {
		t.Fatalf("create test certificates: %v", pkiErr)
	}
	return pki
}

// removeTestPKI deletes the PKI's directory, if one was made.
func removeTestPKI() {
	if pki != nil {
		_ = os.RemoveAll(pki.dir)
	}
}

// clientCert returns the certificate and key files of client name.
func (p *testPKI) clientCert(t *testing.T, name string) (certFile, keyFile string) {
	t.Helper()
	files, ok := p.clients[name]
	if !ok {
		t.Fatalf("no test client certificate %q", name)
	}
	return files[0], files[1]
}

// issuer is a CA certificate and its key.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestPKI() (*testPKI, error) {
	dir, err := os.MkdirTemp("", "agentd-go-pki-")
	if err != nil {
		return nil, err
	}
	p := &testPKI{dir: dir, clients: map[string][2]string{}}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	ca, err := newCA("agentd test CA")
	if err != nil {
		return nil, err
	}
	p.caFile = filepath.Join(dir, "ca.pem")
	if err := writePEM(p.caFile, "CERTIFICATE", ca.cert.Raw); err != nil {
		return nil, err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if p.serverCert, p.serverKey, err = issue(dir, "server", ca, server); err != nil {
		return nil, err
	}
	// Tenants by certificate: alice and alex are tenant-a (O), carol is
	// tenant-b, dave has no O (tenant = CN "dave") and erin has O "dave".
	// mallory's certificate is signed by another CA.
	for _, c := range []struct{ name, cn, org string }{
		{"alice", "alice", "tenant-a"},
		{"alex", "alex", "tenant-a"},
		{"carol", "carol", "tenant-b"},
		{"dave", "dave", ""},
		{"erin", "erin", "dave"},
	} {
		if err := p.addClient(ca, c.name, c.cn, c.org); err != nil {
			return nil, err
		}
	}
	rogue, err := newCA("rogue CA")
	if err != nil {
		return nil, err
	}
	if err := p.addClient(rogue, "mallory", "mallory", "tenant-a"); err != nil {
		return nil, err
	}
	p.tokensFile = filepath.Join(dir, "tokens")
	tokens := "# TOKEN TENANT [SUBJECT]\n\n" +
		tokenAlice + " tenant-a alice\n" +
		tokenAlice2 + " tenant-a alice2\n" +
		tokenBob + " tenant-b\n"
	if err := os.WriteFile(p.tokensFile, []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

func (p *testPKI) addClient(ca *issuer, name, cn, org string) error {
	subject := pkix.Name{CommonName: cn}
	if org != "" {
		subject.Organization = []string{org}
	}
	tmpl := &x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	cert, key, err := issue(p.dir, "client-"+name, ca, tmpl)
	if err != nil {
		return err
	}
	p.clients[name] = [2]string{cert, key}
	return nil
}

var serial struct {
	sync.Mutex
	n int64
}

func nextSerial() *big.Int {
	serial.Lock()
	defer serial.Unlock()
	serial.n++
	return big.NewInt(time.Now().UnixNano() + serial.n)
}

func newCA(cn string) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, nil
}

// issue signs tmpl with ca and writes name.pem and name-key.pem into dir.
func issue(dir, name string, ca *issuer, tmpl *x509.Certificate) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl.SerialNumber = nextSerial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile = filepath.Join(dir, name+".pem")
	keyFile = filepath.Join(dir, name+"-key.pem")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "PRIVATE KEY", keyDER); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func writePEM(path, blockType string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}
