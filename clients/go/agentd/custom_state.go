package agentd

import (
	"encoding/json"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	jsonpatch "github.com/evanphx/json-patch/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// customState is a conversation's live custom state: a JSON document kept
// current by applying the RFC 6902 patches streamed in custom_patch. It is
// safe for concurrent use.
type customState struct {
	mu  sync.Mutex
	doc json.RawMessage // nil until the first patch or an explicit reset
}

// reset replaces the whole document, e.g. with the custom state of a
// client-managed SessionState. A nil value clears it.
func (s *customState) reset(v *structpb.Value) error {
	if v == nil {
		s.mu.Lock()
		s.doc = nil
		s.mu.Unlock()
		return nil
	}
	raw, err := valueJSON(v)
	if err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("agentd: custom state is not valid JSON: %w", err))
	}
	s.mu.Lock()
	s.doc = raw
	s.mu.Unlock()
	return nil
}

// apply applies one chunk's patch operations atomically: either all of them
// apply or the document is left unchanged and an error is returned.
func (s *customState) apply(ops []*agentdv1.JsonPatchOperation) error {
	if len(ops) == 0 {
		return nil
	}
	patch, err := decodePatch(ops)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc := s.doc
	if doc == nil {
		doc = json.RawMessage("null")
	}
	next, err := patch.Apply(doc)
	if err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("agentd: cannot apply custom_patch from the server to the live custom state: %w", err))
	}
	s.doc = next
	return nil
}

// snapshot returns a copy of the current document (nil when none is known).
func (s *customState) snapshot() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doc == nil {
		return nil
	}
	return append(json.RawMessage(nil), s.doc...)
}

// patchOperation is the RFC 6902 JSON form of one JsonPatchOperation.
type patchOperation struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
	From  string          `json:"from,omitempty"`
}

// decodePatch converts the wire operations to a patch the JSON Patch library
// can apply. Operations that carry a value ("add", "replace", "test") get JSON
// null when the wire value is unset.
func decodePatch(ops []*agentdv1.JsonPatchOperation) (jsonpatch.Patch, error) {
	out := make([]patchOperation, 0, len(ops))
	for _, op := range ops {
		p := patchOperation{Op: op.GetOp(), Path: op.GetPath(), From: op.GetFrom()}
		switch op.GetOp() {
		case "add", "replace", "test":
			p.Value = json.RawMessage("null")
			if v := op.GetValue(); v != nil {
				raw, err := valueJSON(v)
				if err != nil {
					return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("agentd: custom_patch value at %q is not valid JSON: %w", op.GetPath(), err))
				}
				p.Value = raw
			}
		}
		out = append(out, p)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("agentd: cannot encode custom_patch: %w", err))
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("agentd: server sent a malformed custom_patch: %w", err))
	}
	return patch, nil
}

// valueJSON encodes a google.protobuf.Value as plain JSON; a Value with no
// kind set is JSON null.
func valueJSON(v *structpb.Value) (json.RawMessage, error) {
	if v == nil || v.GetKind() == nil {
		return json.RawMessage("null"), nil
	}
	return protojson.Marshal(v)
}
