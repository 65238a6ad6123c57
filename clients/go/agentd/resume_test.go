package agentd_test

import (
	"testing"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// twoTurnSession runs two turns on assistant and returns the output's session.
func twoTurnSession(t *testing.T) (sessionID, lastSnapshot string) {
	t.Helper()
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "one")
	runTurn(t, ctx, conv, "two")
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatalf("Output: %v", err)
	}
	return out.GetSessionId(), out.GetSnapshotId()
}

// historyTexts returns the text of every message in snap's history, in order.
func historyTexts(snap *agentdv1.Snapshot) []string {
	var texts []string
	for _, m := range snap.GetState().GetMessages() {
		texts = append(texts, agentd.MessageText(m))
	}
	return texts
}

func TestLatestSnapshotOfSessionHoldsTheWholeHistory(t *testing.T) {
	sessionID, lastSnapshot := twoTurnSession(t)
	snap, err := newClient(t).GetLatestSnapshot(testContext(t), "assistant", sessionID)
	if err != nil {
		t.Fatalf("GetLatestSnapshot: %v", err)
	}
	if snap.GetSnapshotId() != lastSnapshot || snap.GetTurnIndex() != 1 || snap.GetSessionId() != sessionID {
		t.Errorf("latest snapshot = %s (turn %d, session %s), want %s (turn 1, session %s)",
			snap.GetSnapshotId(), snap.GetTurnIndex(), snap.GetSessionId(), lastSnapshot, sessionID)
	}
	texts := historyTexts(snap)
	want := []string{"one", "echo: one", "two", "echo: two"}
	if len(texts) != len(want) {
		t.Fatalf("history = %q, want %q", texts, want)
	}
	for i := range want {
		if texts[i] != want[i] {
			t.Fatalf("history = %q, want %q", texts, want)
		}
	}
}

func TestResumeBySessionOnANewConnectionContinuesTheHistory(t *testing.T) {
	sessionID, lastSnapshot := twoTurnSession(t)
	ctx := testContext(t)
	client := newClient(t) // a new client: its own HTTP/2 connection
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{SessionID: sessionID})
	turn := runTurn(t, ctx, conv, "three")
	if turn.Index() != 2 {
		t.Errorf("resumed turn index = %d, want 2", turn.Index())
	}
	if turn.Text() != "echo: three" {
		t.Errorf("resumed turn text = %q", turn.Text())
	}
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetSessionId() != sessionID {
		t.Errorf("resumed session = %q, want %q", out.GetSessionId(), sessionID)
	}
	snap, err := client.GetSnapshot(ctx, "assistant", turn.SnapshotID())
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetParentId() != lastSnapshot {
		t.Errorf("resumed snapshot parent = %q, want %q", snap.GetParentId(), lastSnapshot)
	}
	if n := len(snap.GetState().GetMessages()); n != 6 {
		t.Errorf("history after the resumed turn has %d messages, want 6", n)
	}
}

func TestResumeBySnapshotBranchesFromThatSnapshot(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	first := runTurn(t, ctx, conv, "one")
	runTurn(t, ctx, conv, "two")
	if _, err := conv.Output(ctx); err != nil {
		t.Fatal(err)
	}

	branch := openChat(t, ctx, client, "assistant", agentd.ChatOptions{SnapshotID: first.SnapshotID()})
	turn := runTurn(t, ctx, branch, "other")
	if _, err := branch.Output(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := client.GetSnapshot(ctx, "assistant", turn.SnapshotID())
	if err != nil {
		t.Fatal(err)
	}
	texts := historyTexts(snap)
	if len(texts) != 4 || texts[2] != "other" || turn.Index() != 1 {
		t.Errorf("branch history = %q at turn %d, want [one, echo: one, other, echo: other] at turn 1", texts, turn.Index())
	}
}
