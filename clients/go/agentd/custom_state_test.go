package agentd

import (
	"encoding/json"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

func mustValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	pv, err := structpb.NewValue(v)
	if err != nil {
		t.Fatalf("structpb.NewValue(%v): %v", v, err)
	}
	return pv
}

func assertJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("custom state = %s, want %s", gb, wb)
	}
}

func TestCustomStateRootReplaceSetsWholeDocument(t *testing.T) {
	var s customState
	err := s.apply([]*agentdv1.JsonPatchOperation{{Op: "replace", Path: proto.String(""), Value: mustValue(t, map[string]any{"tasks": []any{}, "nextId": 1})}})
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, s.snapshot(), `{"tasks":[],"nextId":1}`)
}

func TestCustomStateIncrementalPatchesApplyInOrder(t *testing.T) {
	var s customState
	ops := [][]*agentdv1.JsonPatchOperation{
		{{Op: "replace", Path: proto.String(""), Value: mustValue(t, map[string]any{"tasks": []any{}, "nextId": 1})}},
		{{Op: "add", Path: proto.String("/tasks/-"), Value: mustValue(t, map[string]any{"id": 1, "title": "a", "done": false})}, {Op: "replace", Path: proto.String("/nextId"), Value: mustValue(t, 2)}},
		{{Op: "copy", From: "/tasks/0/title", Path: proto.String("/first")}, {Op: "move", From: "/first", Path: proto.String("/head")}, {Op: "remove", Path: proto.String("/nextId")}},
		{{Op: "test", Path: proto.String("/head"), Value: mustValue(t, "a")}},
	}
	for _, chunk := range ops {
		if err := s.apply(chunk); err != nil {
			t.Fatal(err)
		}
	}
	assertJSON(t, s.snapshot(), `{"tasks":[{"id":1,"title":"a","done":false}],"head":"a"}`)
}

func TestCustomStateUnsetValueIsJSONNull(t *testing.T) {
	var s customState
	if err := s.apply([]*agentdv1.JsonPatchOperation{{Op: "replace", Path: proto.String(""), Value: mustValue(t, map[string]any{})}, {Op: "add", Path: proto.String("/x")}}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, s.snapshot(), `{"x":null}`)
}

func TestCustomStateFailedPatchLeavesDocumentUnchanged(t *testing.T) {
	var s customState
	if err := s.reset(mustValue(t, map[string]any{"notes": []any{"a"}})); err != nil {
		t.Fatal(err)
	}
	err := s.apply([]*agentdv1.JsonPatchOperation{
		{Op: "add", Path: proto.String("/notes/-"), Value: mustValue(t, "b")},
		{Op: "remove", Path: proto.String("/missing/deep")},
	})
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("apply error = %v, want code internal", err)
	}
	assertJSON(t, s.snapshot(), `{"notes":["a"]}`)
}

func TestCustomStateSnapshotIsACopy(t *testing.T) {
	var s customState
	if err := s.reset(mustValue(t, map[string]any{"a": 1})); err != nil {
		t.Fatal(err)
	}
	got := s.snapshot()
	got[0] = '['
	assertJSON(t, s.snapshot(), `{"a":1}`)
}

func TestCustomStateIsNilUntilKnown(t *testing.T) {
	var s customState
	if got := s.snapshot(); got != nil {
		t.Fatalf("snapshot of empty state = %s, want nil", got)
	}
}
