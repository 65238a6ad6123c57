package agentd_test

import (
	"testing"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// noteList is the custom state of the notes agent.
type noteList struct {
	Notes []string `json:"notes"`
}

func TestClientManagedStateRoundTripAccumulatesNotes(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)

	first := openChat(t, ctx, client, "notes", agentd.ChatOptions{})
	turn := runTurn(t, ctx, first, "milk")
	if turn.Text() != "noted: milk" || turn.SnapshotID() != "" {
		t.Errorf("client-managed turn: text %q, snapshot %q; want %q and no snapshot", turn.Text(), turn.SnapshotID(), "noted: milk")
	}
	out, err := first.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetState() == nil || first.State() != out.GetState() {
		t.Fatalf("output state = %v, conversation state = %v; want the output's state tracked", out.GetState(), first.State())
	}

	second := openChat(t, ctx, client, "notes", agentd.ChatOptions{State: first.State()})
	if second.SessionID() != out.GetState().GetSessionId() {
		t.Errorf("session from state = %q, want %q", second.SessionID(), out.GetState().GetSessionId())
	}
	runTurn(t, ctx, second, "eggs")
	live, err := agentd.DecodeCustom[noteList](second)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := second.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, err := agentd.DecodeCustom[noteList](second)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]noteList{"live": live, "final": final} {
		if len(got.Notes) != 2 || got.Notes[0] != "milk" || got.Notes[1] != "eggs" {
			t.Errorf("%s notes = %q, want [milk eggs]", name, got.Notes)
		}
	}
	if n := len(out2.GetState().GetMessages()); n != 4 {
		t.Errorf("client-managed history has %d messages, want 4", n)
	}
	if out2.GetState().GetSessionId() != out.GetState().GetSessionId() {
		t.Errorf("session changed across the round trip: %q -> %q", out.GetState().GetSessionId(), out2.GetState().GetSessionId())
	}
}
