package agentd_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// webhookDelivery is one POST the test receiver got.
type webhookDelivery struct {
	header http.Header
	body   []byte
}

func newWebhookSecret(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// startWebhookReceiver serves a real HTTP receiver on 127.0.0.1 that queues
// every POST and answers 204; it is closed when the test ends.
func startWebhookReceiver(t *testing.T) (string, <-chan webhookDelivery) {
	t.Helper()
	deliveries := make(chan webhookDelivery, 16)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		deliveries <- webhookDelivery{header: r.Header.Clone(), body: body}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	return "http://" + listener.Addr().String() + "/hook", deliveries
}

// TestWebhookDeliveryVerifiesWithEachRotatedSecret: a detached job ends, agentd
// POSTs the event signed with both secrets of its secret file, and the Go
// standardwebhooks library verifies the delivery with each one.
func TestWebhookDeliveryVerifiesWithEachRotatedSecret(t *testing.T) {
	url, deliveries := startWebhookReceiver(t)
	secrets := []string{newWebhookSecret(t), newWebhookSecret(t)}
	secretFile := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(secretFile, []byte(strings.Join(secrets, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server, err := startServer("--webhook-url", url, "--webhook-secret-file", secretFile, "--webhook-allow-private")
	if err != nil {
		t.Fatal(err)
	}
	defer server.stop()
	client := agentd.NewClient(fmt.Sprintf("http://127.0.0.1:%d", server.port))
	out := detachSlowTurn(t, client, 50)

	var got webhookDelivery
	select {
	case got = <-deliveries:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery within 30 s")
	}
	if id := got.header.Get("webhook-id"); id != "msg_"+out.GetSnapshotId() {
		t.Fatalf("webhook-id %q, want msg_%s", id, out.GetSnapshotId())
	}
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(got.body, got.header); err != nil {
			t.Fatalf("secret %d does not verify the delivery: %v", i, err)
		}
	}
	other, _ := standardwebhooks.NewWebhook(newWebhookSecret(t))
	if other.Verify(got.body, got.header) == nil {
		t.Fatal("a foreign secret verified the delivery")
	}
	var payload struct {
		Type string `json:"type"`
		Data struct {
			SnapshotID string `json:"snapshot_id"`
			Status     string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.body, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Type != "invocation.completed" || payload.Data.SnapshotID != out.GetSnapshotId() || payload.Data.Status != "completed" {
		t.Fatalf("payload %+v", payload)
	}
}
