package agentd_test

import (
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func TestRunTextContinuesASessionOneTurnPerCall(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	first, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "one")
	if err != nil {
		t.Fatalf("RunText: %v", err)
	}
	second, err := client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: first.GetSessionId()}, "two")
	if err != nil {
		t.Fatalf("RunText resumed: %v", err)
	}
	if agentd.MessageText(second.GetMessage()) != "echo: two" || second.GetSessionId() != first.GetSessionId() {
		t.Errorf("second run = %q in session %q, want %q in %q", agentd.MessageText(second.GetMessage()), second.GetSessionId(), "echo: two", first.GetSessionId())
	}
	snap, err := client.GetSnapshot(ctx, "assistant", second.GetSnapshotId())
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetTurnIndex() != 1 || snap.GetParentId() != first.GetSnapshotId() {
		t.Errorf("second run snapshot: turn %d parent %q, want turn 1 parent %q", snap.GetTurnIndex(), snap.GetParentId(), first.GetSnapshotId())
	}
}

func TestConnectProtocolOverHTTP1RunsUnaryCalls(t *testing.T) {
	http1 := &http.Client{Transport: &http.Transport{}} // HTTP/1.1 only for http:// URLs
	out, err := newClient(t, agentd.WithConnectProtocol(), agentd.WithHTTPClient(http1)).RunText(testContext(t), "assistant", agentd.ChatOptions{}, "over connect")
	if err != nil {
		t.Fatalf("RunText over the Connect protocol: %v", err)
	}
	if got := agentd.MessageText(out.GetMessage()); got != "echo: over connect" {
		t.Errorf("reply = %q", got)
	}
}

func TestInBandTurnFailureIsAFailedOutputNotAnError(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "flaky", agentd.ChatOptions{})
	good := runTurn(t, ctx, conv, "fine")
	turn, err := conv.SendText(ctx, "please fail")
	if err != nil {
		t.Fatal(err)
	}
	end, err := turn.Wait()
	if err != nil {
		t.Fatalf("failed turn surfaced as an RPC error: %v (code %v)", err, connect.CodeOf(err))
	}
	if end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED {
		t.Errorf("failed turn finish reason = %v, want FAILED", end.GetFinishReason())
	}
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED || out.GetError().GetStatus() != "INTERNAL" {
		t.Errorf("output finish %v error %v, want FAILED with status INTERNAL", out.GetFinishReason(), out.GetError())
	}
	if out.GetSnapshotId() != good.SnapshotID() {
		t.Errorf("output snapshot = %q, want the last good one %q", out.GetSnapshotId(), good.SnapshotID())
	}
}
