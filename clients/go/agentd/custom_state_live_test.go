package agentd_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

// taskList is the custom state of the tasks agent.
type taskList struct {
	Tasks []struct {
		ID    int    `json:"id"`
		Title string `json:"title"`
		Done  bool   `json:"done"`
	} `json:"tasks"`
	NextID int `json:"nextId"`
}

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var av, bv any
	if err := json.Unmarshal(a, &av); err != nil {
		t.Fatalf("invalid JSON %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &bv); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	ab, _ := json.Marshal(av)
	bb, _ := json.Marshal(bv)
	return string(ab) == string(bb)
}

func TestLiveCustomStateEqualsTheSnapshotCustomStateAfterEachTurn(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "tasks", agentd.ChatOptions{})
	for _, title := range []string{"buy milk", "walk the dog"} {
		turn := runTurn(t, ctx, conv, title)
		snap, err := client.GetSnapshot(ctx, "tasks", turn.SnapshotID())
		if err != nil {
			t.Fatal(err)
		}
		stored, err := protojson.Marshal(snap.GetState().GetCustom())
		if err != nil {
			t.Fatal(err)
		}
		live := conv.Custom()
		if live == nil || !sameJSON(t, live, stored) {
			t.Fatalf("after %q: live custom state = %s, snapshot custom state = %s", title, live, stored)
		}
	}
}

func TestDecodeCustomReturnsTheTypedLiveState(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "tasks", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "buy milk")
	runTurn(t, ctx, conv, "walk the dog")
	state, err := agentd.DecodeCustom[taskList](conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Tasks) != 2 || state.Tasks[0].Title != "buy milk" || state.Tasks[1].Title != "walk the dog" || state.Tasks[0].Done {
		t.Errorf("decoded tasks = %+v", state)
	}
}

func TestTurnCarriesTheArtifactsItRecorded(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "tasks", agentd.ChatOptions{})
	turn := runTurn(t, ctx, conv, "buy milk")
	var names []string
	for _, a := range turn.Artifacts() {
		names = append(names, a.GetName())
	}
	if len(names) == 0 || names[len(names)-1] != "tasks.md" {
		t.Errorf("turn artifacts = %q, want tasks.md", names)
	}
}
