package agentd

import (
	"context"
	"errors"
	"io"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// SteerResult is what became of a steer (see Conversation.Steer).
type SteerResult struct {
	// Ack is the server's answer: INPUT_ACK_RESULT_STEERED (the running turn
	// took the message) or INPUT_ACK_RESULT_QUEUED (it runs as Turn).
	Ack *agentdv1.InputAck
	// Turn is the turn the steer runs as, when it was queued; nil when steered.
	Turn *Turn
}

// errControlLost is the error of a control input whose stream broke before
// the server answered it: it may or may not have taken effect.
var errControlLost = errors.New("agentd: the stream broke before the server answered this control input; it may or may not have taken effect (control inputs are not re-sent)")

// Cancel stops the turn while it runs and keeps the conversation: the server
// aborts it (its TurnEnd says FINISH_REASON_ABORTED and nothing of it is
// written) and goes on with the next input. It returns the server's ack:
// INPUT_ACK_RESULT_CANCELLED with the turn index, or
// INPUT_ACK_RESULT_NOTHING_TO_CANCEL when the turn had already ended
// (answered without a call when its TurnEnd had arrived). It reads the
// stream until the ack arrives (chunks read meanwhile are kept for their
// turns); like Send, a ctx cancelled meanwhile cancels the conversation.
//
// The cancel is sent once, with its own request ID, and never re-sent by a
// reconnect (a re-sent cancel could stop a later turn): if the stream breaks
// first, Cancel fails with connect.CodeUnavailable. A turn queued behind
// another cannot be cancelled (connect.CodeFailedPrecondition), nor can one
// after Output or Detach.
func (t *Turn) Cancel(ctx context.Context) (*agentdv1.InputAck, error) {
	c := t.conv
	c.mu.Lock()
	if t.done {
		c.mu.Unlock()
		return &agentdv1.InputAck{Result: agentdv1.InputAckResult_INPUT_ACK_RESULT_NOTHING_TO_CANCEL}, nil
	}
	running := len(c.turns) > 0 && c.turns[0] == t && !t.steer
	c.mu.Unlock()
	if !running {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("agentd: only the running turn (the oldest that has not ended) can be cancelled; this one is queued behind it"))
	}
	return c.sendControl(ctx, withRequestID(&agentdv1.AgentInput{Cancel: true}), nil)
}

// SteerText steers the running turn with a user text; see Steer.
func (c *Conversation) SteerText(ctx context.Context, text string) (*SteerResult, error) {
	return c.Steer(ctx, TextInput(text))
}

// Steer sends input's message to the running turn: prompt agents add it
// before their next model call, custom agents read it from their turn
// context; when no turn takes it, it runs as the next turn. It reads the
// stream until the server answers (chunks read meanwhile are kept for their
// turns) and returns the ack and, when queued, the Turn it runs as. The
// input must carry a message and no resume or detach
// (connect.CodeInvalidArgument). Like Cancel it is sent once and never
// re-sent: a broken stream fails it with connect.CodeUnavailable.
func (c *Conversation) Steer(ctx context.Context, input *agentdv1.AgentInput) (*SteerResult, error) {
	if input.GetMessage() == nil || input.GetDetach() || input.GetResume() != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("agentd: Steer takes an input with a message only (no resume, no detach)"))
	}
	plain := proto.CloneOf(withRequestID(input))
	plain.Steer, plain.Cancel = false, false
	wire := proto.CloneOf(plain)
	wire.Steer = true
	t := &Turn{conv: c, input: plain, steer: true}
	ack, err := c.sendControl(ctx, wire, t)
	if err != nil {
		return nil, err
	}
	if ack.GetResult() == agentdv1.InputAckResult_INPUT_ACK_RESULT_QUEUED {
		return &SteerResult{Ack: ack, Turn: t}, nil
	}
	return &SteerResult{Ack: ack}, nil
}

// sendControl sends a control input (registering steerTurn as a tentative
// turn first, if given) and reads the stream until its ack arrives.
func (c *Conversation) sendControl(ctx context.Context, input *agentdv1.AgentInput, steerTurn *Turn) (*agentdv1.InputAck, error) {
	c.sendMu.Lock()
	if c.requestClosed {
		c.sendMu.Unlock()
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("agentd: cannot cancel or steer after Output or Detach"))
	}
	c.mu.Lock()
	if c.finished {
		err := c.endedErrLocked()
		c.mu.Unlock()
		c.sendMu.Unlock()
		return nil, err
	}
	epoch := c.epoch
	if steerTurn != nil {
		c.turns = append(c.turns, steerTurn)
	}
	c.mu.Unlock()
	err := c.sendLocked(input)
	c.sendMu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !retryable(c.ctx, err) {
		c.mu.Lock()
		c.removeTurnLocked(steerTurn)
		c.mu.Unlock()
		return nil, c.failure(err)
	}
	stop := context.AfterFunc(ctx, c.cancelBy(ctx))
	defer stop()
	id := input.GetRequestId()
	for {
		c.mu.Lock()
		if ack, ok := c.acks[id]; ok {
			delete(c.acks, id)
			c.mu.Unlock()
			return ack, nil
		}
		if c.epoch != epoch {
			c.mu.Unlock()
			return nil, connect.NewError(connect.CodeUnavailable, errControlLost)
		}
		if c.finished {
			err := c.endedErrLocked()
			c.mu.Unlock()
			return nil, err
		}
		c.mu.Unlock()
		c.receive()
	}
}

// ackLocked records an InputAck: a steer's fate settles its tentative turn
// (dropped when a running turn took it, kept as a turn when queued); the
// waiting Cancel or Steer picks the ack up. c.mu must be held.
func (c *Conversation) ackLocked(ack *agentdv1.InputAck) {
	for i, t := range c.turns {
		if t.steer && t.input.GetRequestId() == ack.GetRequestId() {
			if ack.GetResult() == agentdv1.InputAckResult_INPUT_ACK_RESULT_QUEUED {
				t.steer = false
			} else {
				c.turns = append(c.turns[:i], c.turns[i+1:]...)
			}
			break
		}
	}
	if ack.GetRequestId() == "" {
		return
	}
	if c.acks == nil {
		c.acks = map[string]*agentdv1.InputAck{}
	}
	c.acks[ack.GetRequestId()] = ack
}

// dropControlsLocked forgets the control inputs of a broken stream before a
// reconnect: unanswered steers leave the turns (they are not re-sent) and
// waiting Cancel and Steer calls fail. c.mu must be held.
func (c *Conversation) dropControlsLocked() {
	c.epoch++
	c.acks = nil
	kept := c.turns[:0]
	for _, t := range c.turns {
		if t.steer {
			t.endLocked(nil, connect.NewError(connect.CodeUnavailable, errControlLost))
			continue
		}
		kept = append(kept, t)
	}
	c.turns = kept
}

// SendInvocationInput sends a control input to detached work (its pending
// snapshot ID): &agentdv1.AgentInput{Cancel: true} cancels its running turn
// (the work goes on with its next input, or ends); Steer: true with a
// Message steers it. It returns the server's ack. It is sent once and never
// retried (a retried cancel could stop a later turn).
func (c *Client) SendInvocationInput(ctx context.Context, agent, snapshotID string, input *agentdv1.AgentInput) (*agentdv1.InputAck, error) {
	res, err := c.rpc.SendInvocationInput(ctx, connect.NewRequest(&agentdv1.SendInvocationInputRequest{
		Agent: agent, SnapshotId: snapshotID, Input: withRequestID(input),
	}))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetAck(), nil
}
