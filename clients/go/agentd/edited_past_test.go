package agentd_test

import (
	"reflect"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
	"google.golang.org/protobuf/proto"
)

// Fork from an edited past (issue 41 item 3), on the fixture agent
// "ledger-notes" (server-managed, zod state schema {notes: string[], count: int >= 0}).

// notesSnapshots runs one turn per text on a new "ledger-notes" session and
// returns each turn's snapshot ID.
func notesSnapshots(t *testing.T, texts ...string) []string {
	t.Helper()
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "ledger-notes", agentd.ChatOptions{})
	var ids []string
	for _, text := range texts {
		ids = append(ids, runTurn(t, ctx, conv, text).End().GetSnapshotId())
	}
	if _, err := conv.Output(ctx); err != nil {
		t.Fatalf("Output: %v", err)
	}
	return ids
}

func patchOp(t *testing.T, op, path string, value any) *agentdv1.JsonPatchOperation {
	t.Helper()
	p, err := agentd.PatchOp(op, path, value)
	if err != nil {
		t.Fatalf("PatchOp: %v", err)
	}
	return p
}

func notesCustom(t *testing.T, snapshotID string) map[string]any {
	t.Helper()
	snap, err := newClient(t).GetSnapshot(testContext(t), "ledger-notes", snapshotID)
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	return snap.GetState().GetCustom().GetStructValue().AsMap()
}

func TestRunWithStatePatchFromAnEarlierSnapshotCommitsAChildShowingTheEdit(t *testing.T) {
	ids := notesSnapshots(t, "a", "b")
	ctx := testContext(t)
	out, err := newClient(t).RunText(ctx, "ledger-notes", agentd.ChatOptions{
		SnapshotID: ids[0],
		StatePatch: []*agentdv1.JsonPatchOperation{patchOp(t, "replace", "/notes/0", "A (edited)")},
	}, "c")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := agentd.MessageText(out.GetMessage()); got != "notes: A (edited),c" {
		t.Errorf("reply = %q, want it to show the edited notes", got)
	}
	snap, err := newClient(t).GetSnapshot(ctx, "ledger-notes", out.GetSnapshotId())
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	if snap.GetParentId() != ids[0] {
		t.Errorf("parent = %s, want the snapshot the fork started from, %s", snap.GetParentId(), ids[0])
	}
	want := map[string]any{"notes": []any{"A (edited)", "c"}, "count": float64(2)}
	if got := snap.GetState().GetCustom().GetStructValue().AsMap(); !reflect.DeepEqual(got, want) {
		t.Errorf("custom = %v, want %v", got, want)
	}
	if snap.GetEdit().GetEditedBy() != "anonymous" || len(snap.GetEdit().GetStatePatch().GetValues()) != 1 {
		t.Errorf("edit = %v, want a note by anonymous with the one operation", snap.GetEdit())
	}
}

func TestStatePatchLeavesTheOtherBranchUnchanged(t *testing.T) {
	ids := notesSnapshots(t, "a", "b")
	ctx := testContext(t)
	before, err := newClient(t).GetSnapshot(ctx, "ledger-notes", ids[1])
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	_, err = newClient(t).RunText(ctx, "ledger-notes", agentd.ChatOptions{
		SnapshotID: ids[0],
		StatePatch: []*agentdv1.JsonPatchOperation{patchOp(t, "replace", "/notes", []any{"rewritten"})},
	}, "z")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	after, err := newClient(t).GetSnapshot(ctx, "ledger-notes", ids[1])
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	if !proto.Equal(before, after) {
		t.Errorf("the other branch changed:\nbefore %v\nafter  %v", before, after)
	}
	if got := notesCustom(t, ids[1])["notes"]; !reflect.DeepEqual(got, []any{"a", "b"}) {
		t.Errorf("other branch notes = %v, want [a b]", got)
	}
}

func TestStatePatchBreakingTheSchemaIsInvalidArgumentNamingThePath(t *testing.T) {
	ids := notesSnapshots(t, "a")
	_, err := newClient(t).RunText(testContext(t), "ledger-notes", agentd.ChatOptions{
		SnapshotID: ids[0],
		StatePatch: []*agentdv1.JsonPatchOperation{patchOp(t, "replace", "/count", "many")},
	}, "b")
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "count") {
		t.Fatalf("err = %v, want InvalidArgument naming count", err)
	}
}

func TestFailingPatchOperationIsInvalidArgumentNamingItsIndex(t *testing.T) {
	ids := notesSnapshots(t, "a")
	_, err := newClient(t).RunText(testContext(t), "ledger-notes", agentd.ChatOptions{
		SnapshotID: ids[0],
		StatePatch: []*agentdv1.JsonPatchOperation{
			patchOp(t, "add", "/notes/-", "ok"),
			patchOp(t, "test", "/count", 7),
		},
	}, "b")
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "init.state_patch[1]") {
		t.Fatalf("err = %v, want InvalidArgument naming init.state_patch[1]", err)
	}
}

func TestStatePatchOnAClientManagedAgentIsFailedPrecondition(t *testing.T) {
	_, err := newClient(t).RunText(testContext(t), "notes", agentd.ChatOptions{
		StatePatch: []*agentdv1.JsonPatchOperation{patchOp(t, "add", "/notes/-", "x")},
	}, "b")
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("err = %v, want FailedPrecondition", err)
	}
}

func TestMessagesPatchInAChatDropsHistoryBeforeTheFirstTurn(t *testing.T) {
	ids := notesSnapshots(t, "a", "b")
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "ledger-notes", agentd.ChatOptions{
		SnapshotID: ids[1],
		MessagesPatch: []*agentdv1.JsonPatchOperation{
			patchOp(t, "remove", "/3", nil),
			patchOp(t, "remove", "/2", nil),
		},
	})
	turn := runTurn(t, ctx, conv, "c")
	if _, err := conv.Output(ctx); err != nil {
		t.Fatalf("Output: %v", err)
	}
	snap, err := newClient(t).GetSnapshot(ctx, "ledger-notes", turn.End().GetSnapshotId())
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	want := []string{"a", "notes: a", "c", "notes: a,b,c"}
	if got := historyTexts(snap); !reflect.DeepEqual(got, want) {
		t.Errorf("history = %q, want %q", got, want)
	}
}
