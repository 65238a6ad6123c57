package agentd

import (
	"errors"
	"io"

	"connectrpc.com/connect"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// receive reads and dispatches one response, unless the conversation has
// finished. Only one goroutine reads at a time.
func (c *Conversation) receive() {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	c.mu.Lock()
	finished := c.finished
	c.mu.Unlock()
	if finished {
		return
	}
	msg, err := c.stream.Receive()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = connect.NewError(connect.CodeInternal, streamEndedError("agentd: the server closed the Chat stream without an output"))
		}
		// Once the context ended (the watch of openStream closed the stream,
		// or the transport noticed), report why; never retried.
		err = c.failure(err)
		if !c.reconnect(err) {
			c.finish(nil, err)
		}
		return
	}
	if chunk := msg.GetChunk(); chunk != nil {
		if c.skip(chunk) {
			return
		}
		if err := c.custom.apply(chunk.GetCustomPatch()); err != nil {
			c.finish(nil, err)
			return
		}
		c.dispatch(chunk)
	}
	if out := msg.GetOutput(); out != nil {
		// The output is the last response: read to the end so the trailers
		// (and any late status) are consumed before releasing the stream.
		for {
			if _, err := c.stream.Receive(); err != nil {
				break
			}
		}
		c.finish(out, nil)
	}
}

// dispatch hands chunk to the oldest turn still waiting for its TurnEnd.
// Chunks that arrive with no turn waiting only update the tracked state.
func (c *Conversation) dispatch(chunk *agentdv1.AgentStreamChunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ack := chunk.GetInputAck(); ack != nil {
		// Answers a control input; part of no turn.
		c.streak, c.reopened = retryStreak{}, false
		c.ackLocked(ack)
		return
	}
	end := chunk.GetTurnEnd()
	if end != nil && end.GetSnapshotId() != "" {
		c.snapshotID = end.GetSnapshotId()
	}
	if end != nil && end.GetSessionId() != "" {
		c.sessionID = end.GetSessionId()
	}
	if end != nil && end.GetSnapshotId() == "" && end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED {
		c.unstored = true
	}
	if end != nil && end.GetFinishReason() == agentdv1.FinishReason_FINISH_REASON_FAILED {
		// The invocation ended with this turn; its output (with the error) comes next. A stream
		// cut before it is not reconnected: a new Chat would report the session as if nothing failed.
		c.failedTurn = true
	}
	if end != nil && end.GetSnapshotId() != "" && end.GetSessionId() != "" {
		c.resumeID = end.GetSessionId()
	}
	c.streak, c.reopened = retryStreak{}, false // progress: a chunk delivered, or a TurnEnd
	if len(c.turns) == 0 {
		return
	}
	t := c.turns[0]
	t.addLocked(chunk)
	if end != nil {
		c.turns = c.turns[1:]
		t.endLocked(end, nil)
	}
}

// finish records the end of the stream and ends every waiting turn.
func (c *Conversation) finish(out *agentdv1.AgentOutput, err error) {
	c.unwatch()
	_ = c.stream.CloseResponse()
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished, c.output, c.err = true, out, err
	if out != nil {
		if out.GetSessionId() != "" {
			c.sessionID = out.GetSessionId()
		}
		if out.GetSnapshotId() != "" {
			c.snapshotID = out.GetSnapshotId()
		}
		if out.GetState() != nil {
			c.state = out.GetState()
		}
	}
	turnErr := err
	if turnErr == nil {
		turnErr = ErrTurnNotEnded
	}
	for _, t := range c.turns {
		t.endLocked(nil, turnErr)
	}
	c.turns = nil
}
