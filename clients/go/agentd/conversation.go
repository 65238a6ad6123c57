package agentd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"connectrpc.com/connect"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// ErrTurnNotEnded is returned by Turn.Wait when the conversation ended (after
// Detach, or with an output) before the turn's TurnEnd arrived.
var ErrTurnNotEnded = errors.New("agentd: the conversation ended before this turn's TurnEnd arrived")

// Conversation is one multi-turn Chat stream with an agent. Send inputs with
// Send or SendText, read each turn from the returned Turn, and finish with
// Output (no more input) or Detach (hand the rest to the server). Its methods
// are safe for concurrent use; inputs are delivered in the order Send is
// called and each turn's chunks go to the Turn of that input.
//
// Server-side failures of the stream (an unknown agent, a resume source that
// does not match the agent, ...) are *connect.Error values that surface from
// the first call that reads the stream: Turn.Chunks, Turn.Wait, Output or
// Detach (or Send, once the server has closed the stream).
//
// A stream that breaks in a way that may be retried (see RetryPolicy) is
// reopened: the new stream resumes the session by its ID once a TurnEnd (or
// the output) named it, else it re-sends the original ChatOptions; then every
// input whose TurnEnd has not arrived is re-sent, in order, with its request
// ID, so the server runs each at most once (a committed one answers with its
// TurnEnd). The chunks of a re-sent turn already delivered are dropped, so
// each turn's chunks and TurnEnd are delivered once. A conversation of a
// client-managed agent (no snapshots) is not reopened once a turn ended:
// its state lives only in the stream.
type Conversation struct {
	client    *Client
	agent     string
	ctx       context.Context         // the conversation's own context: cancel cancels it
	cancelCtx context.CancelCauseFunc // cancels ctx; the cause says why (see contextError)
	custom    customState

	// stream and unwatch are replaced by a reconnect, which holds sendMu and
	// recvMu; unwatch stops the watch of ctx that closes stream (see
	// openStream).
	stream  *connect.BidiStreamForClient[agentdv1.ChatRequest, agentdv1.ChatResponse]
	unwatch func() bool

	sendMu        sync.Mutex
	firstInit     *agentdv1.AgentInit  // the init of ChatOptions
	init          *agentdv1.AgentInit  // sent with the next request on the stream, then nil
	detach        *agentdv1.AgentInput // the detach input sent, if any
	requestClosed bool

	recvMu   sync.Mutex  // held while reading one response from the stream
	streak   retryStreak // Chat failures since the last progress; guarded by recvMu
	reopened bool        // the stream was reopened and made no progress yet; guarded by recvMu

	mu         sync.Mutex // guards the fields below and every Turn's fields
	turns      []*Turn    // sent turns whose TurnEnd has not arrived, oldest first
	finished   bool
	output     *agentdv1.AgentOutput
	err        error
	sessionID  string
	snapshotID string
	state      *agentdv1.SessionState
	resumeID   string                        // the session a reconnect resumes, once the server named it
	unstored   bool                          // a TurnEnd without a snapshot arrived: client-managed
	failedTurn bool                          // a TurnEnd said FAILED: the invocation ended there, never reconnected
	acks       map[string]*agentdv1.InputAck // control-input acks not yet picked up, by request ID
	epoch      int                           // streams reopened: a control input sent on an earlier one is lost
}

// Chat opens a conversation with agent, continuing the conversation chosen by
// opts (see ChatOptions). Nothing is sent until the first Send, Output or
// Detach; ctx bounds the whole conversation. Call Output, Detach or Close
// when done so the stream is released.
//
// When ctx ends (or the context of a pending Send, Output, Detach, Cancel or
// Steer), the conversation ends at once, whatever its connection does: the
// calls reading it fail with connect.CodeDeadlineExceeded for a deadline,
// connect.CodeCanceled for a cancellation, and nothing is retried.
func (c *Client) Chat(ctx context.Context, agent string, opts ChatOptions) (*Conversation, error) {
	conv := &Conversation{
		client:     c,
		agent:      agent,
		init:       opts.init(agent),
		sessionID:  opts.SessionID,
		snapshotID: opts.SnapshotID,
		state:      opts.State,
	}
	if opts.State != nil {
		if err := conv.custom.reset(opts.State.GetCustom()); err != nil {
			return nil, err
		}
		if conv.sessionID == "" {
			conv.sessionID = opts.State.GetSessionId()
		}
	}
	conv.firstInit = conv.init
	conv.ctx, conv.cancelCtx = context.WithCancelCause(ctx)
	conv.openStream()
	return conv, nil
}

// openStream opens a Chat stream on the conversation's context and watches
// that context: net/http's HTTP/2 client stops watching a request's context
// once the response has begun while the request body is still open, which
// a bidi stream's is until Output or Detach, so a Receive on a connection
// that went silent (its peer vanished: no FIN, no RST, keepalive off) would
// outlive the context. When the context ends, the watch closes the stream's
// response side: a blocked Receive returns (and a blocked Send, as the
// transport then drops the request body). unwatch stops the watch once the
// stream is done with. sendMu and recvMu must be held (or the conversation
// not shared yet).
func (c *Conversation) openStream() {
	stream := c.client.rpc.Chat(c.ctx)
	c.stream = stream
	c.unwatch = context.AfterFunc(c.ctx, func() { _ = stream.CloseResponse() })
}

// cancel cancels the conversation (Close, or its end).
func (c *Conversation) cancel() { c.cancelCtx(context.Canceled) }

// cancelBy returns the function that cancels the conversation because ctx,
// the context of one of its calls, ended: ctx's error is the cause, so a
// call's deadline reads as connect.CodeDeadlineExceeded.
func (c *Conversation) cancelBy(ctx context.Context) func() {
	return func() { c.cancelCtx(ctx.Err()) }
}

// failure is the error to report for err, the failure of a send or receive
// on the stream: once the conversation's context ended, the context's error
// (see contextError), not what the stream closed by it says, unless the
// server sent a status.
func (c *Conversation) failure(err error) error {
	if err == nil || connect.IsWireError(err) {
		return err
	}
	if ctxErr := contextError(c.ctx); ctxErr != nil {
		return ctxErr
	}
	return err
}

// contextError is the error of a call whose context ended:
// connect.CodeDeadlineExceeded when a deadline ended it (the context's own,
// or that of the call whose end cancelled it: the cause), else
// connect.CodeCanceled. It is nil while ctx is live.
func contextError(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, cause)
	}
	return connect.NewError(connect.CodeCanceled, cause)
}

// Agent returns the name of the agent this conversation talks to.
func (c *Conversation) Agent() string { return c.agent }

// SessionID returns the conversation's session ID when known: the one
// resumed, the one in the client-managed State, or, for a fresh session, the
// one the first TurnEnd (or the output) carries.
func (c *Conversation) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SnapshotID returns the latest snapshot ID known: the resumed one, then each
// turn's TurnEnd snapshot, then the output's (the pending snapshot after
// Detach). Client-managed agents have none.
func (c *Conversation) SnapshotID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotID
}

// State returns the client-managed state: the State the conversation started
// from, replaced by the output's State once Output returned. Send it back in
// ChatOptions.State to continue. Server-managed agents return no state in
// their output, so this stays nil for them.
func (c *Conversation) State() *agentdv1.SessionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Custom returns a copy of the live custom state as JSON: the custom state of
// the starting State (client-managed), kept current by applying every
// custom_patch streamed so far. It is nil while nothing is known (for example
// before the first patch of a resumed server-managed session).
func (c *Conversation) Custom() json.RawMessage { return c.custom.snapshot() }

// DecodeCustom decodes the conversation's live custom state into a T. With no
// custom state known it returns T's zero value.
func DecodeCustom[T any](c *Conversation) (T, error) {
	var v T
	raw := c.Custom()
	if raw == nil {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("agentd: cannot decode the custom state of agent %q into %T: %w", c.agent, v, err)
	}
	return v, nil
}

// SendText sends a user message made of text; see Send.
func (c *Conversation) SendText(ctx context.Context, text string) (*Turn, error) {
	return c.Send(ctx, TextInput(text))
}

// Send sends input and returns the Turn it starts; iterate Turn.Chunks or
// call Turn.Wait to read it. Send does not wait for the turn. If ctx is
// cancelled before the turn ends, the whole conversation is cancelled (a
// stream cannot be interrupted per turn). Sending after Output or Detach
// fails with connect.CodeFailedPrecondition.
//
// The input is sent with a request ID: input.RequestId, or a new one on a
// copy of input. With retries on, an input whose send fails on a broken
// stream is re-sent by the reconnect; its Turn reports the outcome.
func (c *Conversation) Send(ctx context.Context, input *agentdv1.AgentInput) (*Turn, error) {
	if err := contextError(ctx); err != nil {
		return nil, err
	}
	input = withRequestID(input)
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.requestClosed {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("agentd: cannot Send after Output or Detach; open a new conversation with Chat"))
	}
	t := &Turn{conv: c, input: input}
	c.mu.Lock()
	if c.finished {
		err := c.endedErrLocked()
		c.mu.Unlock()
		return nil, err
	}
	// Registered before sending, so a turn that ends at once still
	// unregisters it: a ctx cancelled after its turn must not cancel the
	// conversation.
	t.stop = context.AfterFunc(ctx, c.cancelBy(ctx))
	c.turns = append(c.turns, t)
	c.mu.Unlock()

	err := c.sendLocked(input)
	if err == nil || (c.client.retry.enabled() && (errors.Is(err, io.EOF) || retryable(c.ctx, err))) {
		// A broken stream fails the next Receive, whose reconnect re-sends t.
		return t, nil
	}
	c.mu.Lock()
	c.removeTurnLocked(t)
	c.mu.Unlock()
	t.stop()
	return nil, c.sendError(err)
}

// sendLocked sends input on the stream, with the init if it was not sent
// yet; sendMu must be held.
func (c *Conversation) sendLocked(input *agentdv1.AgentInput) error {
	if err := c.stream.Send(&agentdv1.ChatRequest{Init: c.init, Input: input}); err != nil {
		return err
	}
	c.init = nil
	return nil
}

// Detach asks the server to carry on with the remaining work in the
// background, closes the conversation and returns the output: finish reason
// FINISH_REASON_DETACHED and the pending snapshot ID, to follow with
// Client.WatchSnapshot or cancel with Client.Abort. Chunks of turns still in
// flight are read (and patches applied) until the server closes the stream.
// Agents whose store cannot run background work fail with
// connect.CodeFailedPrecondition; a conversation that already failed returns
// its error.
func (c *Conversation) Detach(ctx context.Context) (*agentdv1.AgentOutput, error) {
	c.sendMu.Lock()
	if c.requestClosed {
		c.sendMu.Unlock()
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("agentd: cannot Detach after Output or Detach"))
	}
	c.mu.Lock()
	if c.finished {
		// The stream is gone: report why, as Send does, not the failed send.
		err := c.endedErrLocked()
		c.mu.Unlock()
		c.sendMu.Unlock()
		return nil, err
	}
	c.mu.Unlock()
	c.detach = withRequestID(&agentdv1.AgentInput{Detach: true})
	err := c.sendLocked(c.detach)
	c.init = nil
	c.closeRequestLocked()
	c.sendMu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !(c.client.retry.enabled() && retryable(c.ctx, err)) {
		err = c.failure(err)
		c.cancel()
		return nil, err
	}
	return c.await(ctx)
}

// Output half-closes the conversation ("no more input"), reads every
// remaining chunk (turns still in flight complete normally) and returns the
// final AgentOutput. It is idempotent: later calls return the same result.
// An in-band failure is not an error: the output has finish reason
// FINISH_REASON_FAILED and Error set.
func (c *Conversation) Output(ctx context.Context) (*agentdv1.AgentOutput, error) {
	c.sendMu.Lock()
	if !c.requestClosed {
		if c.init != nil {
			// Nothing was sent: the server still needs to know the agent.
			_ = c.stream.Send(&agentdv1.ChatRequest{Init: c.init})
			c.init = nil
		}
		c.closeRequestLocked()
	}
	c.sendMu.Unlock()
	return c.await(ctx)
}

// Close abandons the conversation: it cancels the stream, which cancels the
// server's work unless the conversation was detached. Waiting turns end with
// a connect.CodeCanceled error. Close after Output or Detach is a no-op.
func (c *Conversation) Close() error {
	c.cancel()
	return nil
}

// closeRequestLocked half-closes the request side; sendMu must be held.
func (c *Conversation) closeRequestLocked() {
	if !c.requestClosed {
		c.requestClosed = true
		_ = c.stream.CloseRequest()
	}
}

// await reads the stream until the output (or an error) arrives.
func (c *Conversation) await(ctx context.Context) (*agentdv1.AgentOutput, error) {
	stop := context.AfterFunc(ctx, c.cancelBy(ctx))
	defer stop()
	for {
		c.mu.Lock()
		if c.finished {
			out, err := c.output, c.err
			c.mu.Unlock()
			return out, err
		}
		c.mu.Unlock()
		c.receive()
	}
}

// sendError turns a failed Send into the error the caller should see. A
// server that closed the stream makes Send fail with io.EOF; the real status
// is read from the response side.
func (c *Conversation) sendError(err error) error {
	if !errors.Is(err, io.EOF) {
		return c.failure(err)
	}
	for {
		c.mu.Lock()
		if c.finished {
			err := c.endedErrLocked()
			c.mu.Unlock()
			return err
		}
		c.mu.Unlock()
		c.receive()
	}
}

// endedErrLocked explains why a finished conversation takes no more input.
func (c *Conversation) endedErrLocked() error {
	if c.err != nil {
		return c.err
	}
	return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("agentd: the conversation already ended (finish reason %s); open a new one with Chat", c.output.GetFinishReason()))
}

// removeTurnLocked drops t from the waiting turns (its input was not sent).
func (c *Conversation) removeTurnLocked(t *Turn) {
	for i, w := range c.turns {
		if w == t {
			c.turns = append(c.turns[:i], c.turns[i+1:]...)
			return
		}
	}
}
