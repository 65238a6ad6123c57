package agentd

import (
	"connectrpc.com/connect"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// streamEndedError is the error of a stream that ended before the output it
// was waiting for: errors.Is(err, errStreamEnded) holds, so it is retried.
type streamEndedError string

func (e streamEndedError) Error() string { return string(e) }

// Is makes a streamEndedError match errStreamEnded.
func (e streamEndedError) Is(target error) bool { return target == errStreamEnded }

// reconnect replaces a stream that failed with err by a new one, if the retry
// policy allows (it waits the backoff first), and reports whether it did. The
// new stream resumes the session (or re-sends the original init) and re-sends
// every input whose TurnEnd has not arrived; its own failure surfaces from
// its next Receive, which reconnects again while the retry budget lasts. recvMu
// must be held.
//
// A reopened stream that fails with connect.CodeAborted before making
// progress is retried too: the session is most likely still held by the
// server's invocation of the broken stream, which ends as soon as the server
// notices the broken connection (nothing ran: the busy check comes first).
func (c *Conversation) reconnect(err error) bool {
	c.mu.Lock()
	unstored, failedTurn := c.unstored, c.failedTurn
	c.mu.Unlock()
	ownHolder := c.reopened && connect.CodeOf(err) == connect.CodeAborted
	if unstored || failedTurn || !(retryable(c.ctx, err) || ownHolder) || !c.client.retry.pause(c.ctx, "Chat", &c.streak, err) {
		return false
	}
	c.reopened = true
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.unwatch()
	_ = c.stream.CloseRequest()
	_ = c.stream.CloseResponse()
	c.openStream()
	c.mu.Lock()
	c.init = c.reconnectInitLocked()
	c.dropControlsLocked()
	pending := make([]*agentdv1.AgentInput, 0, len(c.turns)+1)
	for _, t := range c.turns {
		// The re-sent turn starts over: drop the chunks already delivered.
		t.skip = len(t.chunks)
		pending = append(pending, t.input)
	}
	c.mu.Unlock()
	if c.detach != nil {
		pending = append(pending, c.detach)
	}
	for _, input := range pending {
		if c.sendLocked(input) != nil {
			return true // the stream broke again: its Receive fails
		}
	}
	if c.requestClosed {
		if c.init != nil {
			// Nothing to re-send: the server still needs the init.
			_ = c.stream.Send(&agentdv1.ChatRequest{Init: c.init})
			c.init = nil
		}
		_ = c.stream.CloseRequest()
	}
	return true
}

// reconnectInitLocked is the init of a reopened stream: resume the session
// once the server named it (a TurnEnd with a snapshot), else the original
// init again (its request-ID'd first input resolves to the same session).
// c.mu must be held.
func (c *Conversation) reconnectInitLocked() *agentdv1.AgentInit {
	if c.resumeID == "" {
		return c.firstInit
	}
	return &agentdv1.AgentInit{Agent: c.agent, SessionId: c.resumeID, BusyPolicy: c.firstInit.GetBusyPolicy()}
}

// skip reports whether chunk repeats one already delivered (a re-sent turn
// streams from its start) and must be dropped. A TurnEnd is never dropped.
func (c *Conversation) skip(chunk *agentdv1.AgentStreamChunk) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.turns) == 0 || chunk.GetTurnEnd() != nil || chunk.GetInputAck() != nil {
		return false
	}
	t := c.turns[0]
	if t.skip == 0 {
		return false
	}
	t.skip--
	return true
}
