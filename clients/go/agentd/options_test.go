package agentd

import (
	"net/http"
	"testing"
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
