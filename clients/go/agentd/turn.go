package agentd

import (
	"iter"
	"strings"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// Turn is one turn of a Conversation: the chunks the agent streams for one
// input, ending with the chunk that carries the TurnEnd. Its methods are safe
// for concurrent use. Chunks are kept, so a turn can be iterated again.
type Turn struct {
	conv  *Conversation
	stop  func() bool          // unregisters the Send context's cancellation
	input *agentdv1.AgentInput // sent again, request ID and all, by a reconnect

	// Guarded by conv.mu.
	chunks    []*agentdv1.AgentStreamChunk
	text      strings.Builder
	artifacts []*agentdv1.Artifact
	end       *agentdv1.TurnEnd
	done      bool
	err       error
	skip      int  // chunks of a re-sent run to drop: they were delivered
	steer     bool // sent as a steer, not yet answered: a turn only if the server queues it
}

// Chunks iterates over the turn's chunks as they arrive (model chunks, custom
// patches, artifacts), the last one carrying the TurnEnd. When the chunk is
// yielded, its custom_patch has already been applied to
// Conversation.Custom. A stream failure is yielded as the final (nil, err)
// pair; a conversation that ended before the TurnEnd yields
// ErrTurnNotEnded. Breaking out of the loop leaves the rest of the turn to
// be read later (by Wait, Output or another iteration).
func (t *Turn) Chunks() iter.Seq2[*agentdv1.AgentStreamChunk, error] {
	return func(yield func(*agentdv1.AgentStreamChunk, error) bool) {
		for i := 0; ; i++ {
			chunk, err, ok := t.next(i)
			if !ok {
				return
			}
			if !yield(chunk, err) || err != nil {
				return
			}
		}
	}
}

// next returns chunk i, reading from the stream until it or the turn's end
// arrives. ok is false past the end; the error (if any) comes at index
// len(chunks).
func (t *Turn) next(i int) (chunk *agentdv1.AgentStreamChunk, err error, ok bool) {
	c := t.conv
	for {
		c.mu.Lock()
		switch {
		case i < len(t.chunks):
			chunk = t.chunks[i]
			c.mu.Unlock()
			return chunk, nil, true
		case t.done:
			err := t.err
			c.mu.Unlock()
			if i == len(t.chunks) && err != nil {
				return nil, err, true
			}
			return nil, nil, false
		}
		c.mu.Unlock()
		c.receive()
	}
}

// Wait reads the rest of the turn and returns its TurnEnd. It fails with the
// stream's *connect.Error, or ErrTurnNotEnded when the conversation ended
// before the TurnEnd (after Detach, for example).
func (t *Turn) Wait() (*agentdv1.TurnEnd, error) {
	for _, err := range t.Chunks() {
		if err != nil {
			return nil, err
		}
	}
	c := t.conv
	c.mu.Lock()
	defer c.mu.Unlock()
	return t.end, t.err
}

// End returns the TurnEnd once it arrived, nil before.
func (t *Turn) End() *agentdv1.TurnEnd {
	t.conv.mu.Lock()
	defer t.conv.mu.Unlock()
	return t.end
}

// Done reports whether the turn has ended (with a TurnEnd or an error).
func (t *Turn) Done() bool {
	t.conv.mu.Lock()
	defer t.conv.mu.Unlock()
	return t.done
}

// Text returns the text the model streamed in this turn so far: the
// concatenated text parts of its model chunks.
func (t *Turn) Text() string {
	t.conv.mu.Lock()
	defer t.conv.mu.Unlock()
	return t.text.String()
}

// Artifacts returns the artifacts streamed in this turn so far, in order.
func (t *Turn) Artifacts() []*agentdv1.Artifact {
	t.conv.mu.Lock()
	defer t.conv.mu.Unlock()
	return append([]*agentdv1.Artifact(nil), t.artifacts...)
}

// SnapshotID returns the turn-end snapshot ID: empty before the TurnEnd, for
// client-managed agents and for failed turns.
func (t *Turn) SnapshotID() string { return t.End().GetSnapshotId() }

// FinishReason returns why the turn finished (UNSPECIFIED before the TurnEnd).
func (t *Turn) FinishReason() agentdv1.FinishReason { return t.End().GetFinishReason() }

// Index returns the zero-based index of the turn in its session, from the
// TurnEnd (0 before it arrives).
func (t *Turn) Index() int32 { return t.End().GetTurnIndex() }

// addLocked records chunk; conv.mu must be held.
func (t *Turn) addLocked(chunk *agentdv1.AgentStreamChunk) {
	t.chunks = append(t.chunks, chunk)
	if mc := chunk.GetModelChunk(); mc != nil {
		t.text.WriteString(Text(mc.GetContent()))
	}
	if a := chunk.GetArtifact(); a != nil {
		t.artifacts = append(t.artifacts, a)
	}
}

// endLocked ends the turn with end or err; conv.mu must be held.
func (t *Turn) endLocked(end *agentdv1.TurnEnd, err error) {
	if t.done {
		return
	}
	t.end, t.err, t.done = end, err, true
	if t.stop != nil {
		t.stop()
	}
}
