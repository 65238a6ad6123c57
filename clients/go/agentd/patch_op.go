package agentd

import (
	"fmt"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// PatchOp builds one RFC 6902 operation for ChatOptions.StatePatch or
// MessagesPatch: op is "add", "remove", "replace", "move", "copy" or "test";
// path a JSON Pointer ("" is the whole document); value a JSON value as
// structpb.NewValue takes it (nil, bool, numbers, string, []any,
// map[string]any; pass nil for "remove"). For "move" and "copy" use
// PatchMove. It fails when value cannot be a JSON value.
func PatchOp(op, path string, value any) (*agentdv1.JsonPatchOperation, error) {
	operation := &agentdv1.JsonPatchOperation{Op: op, Path: &path}
	if value == nil {
		return operation, nil
	}
	v, err := structpb.NewValue(value)
	if err != nil {
		return nil, fmt.Errorf("agentd: patch value at %q: %w", path, err)
	}
	operation.Value = v
	return operation, nil
}

// PatchMove builds a "move" or "copy" operation (op) from one JSON Pointer to another.
func PatchMove(op, from, path string) *agentdv1.JsonPatchOperation {
	return &agentdv1.JsonPatchOperation{Op: op, Path: &path, From: from}
}
