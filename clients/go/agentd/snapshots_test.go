package agentd_test

import (
	"testing"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func TestListSnapshotsPagesNewestFirst(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		ids = append(ids, runTurn(t, ctx, conv, text).SnapshotID())
	}
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for snap, err := range client.AllSnapshots(ctx, "assistant", out.GetSessionId(), agentd.ListOptions{PageSize: 2}) {
		if err != nil {
			t.Fatalf("AllSnapshots: %v", err)
		}
		if snap.GetState() != nil {
			t.Errorf("snapshot %s has state without IncludeState", snap.GetSnapshotId())
		}
		listed = append(listed, snap.GetSnapshotId())
	}
	want := []string{ids[2], ids[1], ids[0]}
	if len(listed) != 3 || listed[0] != want[0] || listed[1] != want[1] || listed[2] != want[2] {
		t.Errorf("listed = %q, want %q", listed, want)
	}
}

func TestWatchCompletedSnapshotYieldsCompletedAndEnds(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	out, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "one")
	if err != nil {
		t.Fatal(err)
	}
	var statuses []agentdv1.SnapshotStatus
	for status, err := range client.WatchSnapshot(ctx, "assistant", out.GetSnapshotId()) {
		if err != nil {
			t.Fatalf("WatchSnapshot: %v", err)
		}
		statuses = append(statuses, status)
	}
	if len(statuses) != 1 || statuses[0] != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED {
		t.Errorf("statuses = %v, want [COMPLETED]", statuses)
	}
}

func TestSnapshotReadsApplyTheStateTransform(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "redacted", agentd.ChatOptions{})
	turn := runTurn(t, ctx, conv, "hello")
	snap, err := client.GetSnapshot(ctx, "redacted", turn.SnapshotID())
	if err != nil {
		t.Fatal(err)
	}
	stored := snap.GetState().GetCustom().GetStructValue().GetFields()
	live, err := agentd.DecodeCustom[map[string]any](conv)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored["secret"]; ok {
		t.Errorf("snapshot custom state exposes secret: %v", stored)
	}
	if _, ok := live["secret"]; ok {
		t.Errorf("live custom state exposes secret: %v", live)
	}
	if _, ok := live["visible"]; !ok {
		t.Errorf("live custom state lacks visible: %v", live)
	}
}
