package agentd_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// slowInput is a user message the offline echo model answers after delayMs.
func slowInput(t *testing.T, text string, delayMs int) *agentdv1.AgentInput {
	t.Helper()
	meta, err := structpb.NewStruct(map[string]any{"echoDelayMs": delayMs})
	if err != nil {
		t.Fatal(err)
	}
	input := agentd.TextInput(text)
	input.Message.Metadata = meta
	return input
}

// detachSlowTurn starts a slow turn on assistant, detaches and returns the
// detach output.
func detachSlowTurn(t *testing.T, client *agentd.Client, delayMs int) *agentdv1.AgentOutput {
	t.Helper()
	ctx := testContext(t)
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	if _, err := conv.Send(ctx, slowInput(t, "background", delayMs)); err != nil {
		t.Fatal(err)
	}
	out, err := conv.Detach(ctx)
	if err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_DETACHED || out.GetSnapshotId() == "" {
		t.Fatalf("detach output: finish %v snapshot %q, want DETACHED with a pending snapshot", out.GetFinishReason(), out.GetSnapshotId())
	}
	if conv.SnapshotID() != out.GetSnapshotId() {
		t.Errorf("conversation snapshot = %q, want the pending %q", conv.SnapshotID(), out.GetSnapshotId())
	}
	return out
}

func TestDetachedWorkIsWatchedUntilCompleted(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	out := detachSlowTurn(t, client, 300)

	var statuses []agentdv1.SnapshotStatus
	for status, err := range client.WatchSnapshot(ctx, "assistant", out.GetSnapshotId()) {
		if err != nil {
			t.Fatalf("WatchSnapshot: %v", err)
		}
		statuses = append(statuses, status)
	}
	if len(statuses) < 2 || statuses[0] != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_PENDING || statuses[len(statuses)-1] != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED {
		t.Fatalf("statuses = %v, want PENDING ... COMPLETED", statuses)
	}
	snap, err := client.GetSnapshot(ctx, "assistant", out.GetSnapshotId())
	if err != nil {
		t.Fatal(err)
	}
	msgs := snap.GetState().GetMessages()
	if len(msgs) == 0 || agentd.MessageText(msgs[len(msgs)-1]) != "echo: background" {
		t.Errorf("completed background history = %v, want it to end with the reply", msgs)
	}
}

func TestAbortStopsDetachedWork(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	out := detachSlowTurn(t, client, 10000)

	status, err := client.Abort(ctx, "assistant", out.GetSnapshotId())
	if err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if status != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_ABORTED {
		t.Errorf("Abort status = %v, want ABORTED", status)
	}
	var last agentdv1.SnapshotStatus
	for status, err := range client.WatchSnapshot(ctx, "assistant", out.GetSnapshotId()) {
		if err != nil {
			t.Fatalf("WatchSnapshot: %v", err)
		}
		last = status
	}
	if last != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_ABORTED {
		t.Errorf("watched final status = %v, want ABORTED", last)
	}
}

func TestAbortOfATerminalSnapshotReturnsItsStatus(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "done")
	if err != nil {
		t.Fatal(err)
	}
	status, err := client.Abort(ctx, "assistant", out.GetSnapshotId())
	if err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if status != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED {
		t.Errorf("Abort of a completed snapshot = %v, want COMPLETED", status)
	}
}
