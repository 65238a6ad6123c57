package agentd

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"

	"connectrpc.com/connect"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// AttachedRun is the stream of detached work a client attached to with
// Client.Attach: its chunks in sequence order, then its output. Chunks are
// read from the stream as they are asked for (Chunks, Output), each once. Its
// methods are safe for concurrent use.
//
// When the server running the work dies, another server sharing the store
// takes it over: the stream then holds, at that point, one chunk with
// Takeover set. The chunks before it whose Sequence is greater than
// Takeover.SupersededAfter belong to the turn that was cut; that turn runs
// again after the marker, so they are superseded. Text drops their text;
// Chunks still yields every chunk, the marker included (callers keeping their
// own record drop what it supersedes), and LastSequence counts them all.
type AttachedRun struct {
	client     *Client
	ctx        context.Context // the run's context, cancelled by Close
	agent      string
	snapshotID string
	stream     *connect.ServerStreamForClient[agentdv1.AttachInvocationResponse]
	cancel     context.CancelFunc
	streak     retryStreak // failures since the last chunk; guarded by recvMu

	recvMu sync.Mutex // held while reading one response from the stream

	mu     sync.Mutex // guards the fields below
	last   uint32
	texts  []chunkText // the text of each model chunk read, in order
	output *agentdv1.AgentOutput
	err    error
	done   bool
}

// Attach attaches to detached work: snapshotID is the pending snapshot its
// DETACHED output returned (Conversation.Detach, or Run with
// AgentInput.Detach). The run streams the chunks whose sequence is greater
// than afterSequence (0: every chunk streamed after detach) — those the
// server recorded first, then the live ones — and ends with the work's output
// once it ended (FINISH_REASON_STOP, FAILED with Error, or ABORTED). Any
// server sharing the store answers. After a dropped connection, attach again
// with afterSequence = AttachedRun.LastSequence() to receive the rest exactly
// once.
//
// ctx bounds the whole stream; AttachedRun.Close (or cancelling ctx) stops
// it. Errors surface from AttachedRun.Chunks and AttachedRun.Output as
// *connect.Error: connect.CodeNotFound (unknown, or another owner's or
// agent's snapshot), connect.CodeFailedPrecondition (not detached work, or
// its chunks are past the server's --chunk-retention), connect.CodeUnavailable
// (the work stopped sending heartbeats before it ended: it reads as expired).
func (c *Client) Attach(ctx context.Context, agent, snapshotID string, afterSequence uint32) *AttachedRun {
	ctx, cancel := context.WithCancel(ctx)
	run := &AttachedRun{client: c, ctx: ctx, agent: agent, snapshotID: snapshotID, cancel: cancel, last: afterSequence}
	if err := run.open(); err != nil && !run.reopen(err) {
		run.finish(nil, err)
	}
	return run
}

// open opens the stream from the last sequence read.
func (r *AttachedRun) open() error {
	stream, err := r.client.rpc.AttachInvocation(r.ctx, connect.NewRequest(&agentdv1.AttachInvocationRequest{
		Agent: r.agent, SnapshotId: r.snapshotID, AfterSequence: r.last,
	}))
	r.stream = stream
	return err
}

// reopen retries a stream that failed with err, if the retry policy allows,
// until one opens: it reports whether one did. A reopened stream continues
// after the last sequence read, so no chunk is read twice.
func (r *AttachedRun) reopen(err error) bool {
	for r.client.retry.wait(r.ctx, "AttachInvocation", &r.streak, err) {
		if r.stream != nil {
			_ = r.stream.Close()
		}
		if err = r.open(); err == nil {
			return true
		}
	}
	return false
}

// Chunks iterates over the chunks not read yet, in sequence order (model
// chunks, custom patches, artifacts, TurnEnds; each carries its Sequence),
// reading them as they arrive; the iteration ends when the output arrives. A
// stream failure is yielded as the final (nil, err) pair. Breaking out of the
// loop leaves the rest to be read later (by Output or another iteration); call
// Close to stop the stream instead.
func (r *AttachedRun) Chunks() iter.Seq2[*agentdv1.AgentStreamChunk, error] {
	return func(yield func(*agentdv1.AgentStreamChunk, error) bool) {
		for {
			chunk, err := r.next()
			if chunk == nil && err == nil {
				return
			}
			if !yield(chunk, err) || err != nil {
				return
			}
		}
	}
}

// Output reads the rest of the stream (chunks not read yet are skipped, but
// still counted in LastSequence and Text) and returns the work's output. An
// in-band failure is not an error: the output has FinishReason
// FINISH_REASON_FAILED and Error set. Later calls return the same result.
func (r *AttachedRun) Output() (*agentdv1.AgentOutput, error) {
	for {
		chunk, err := r.next()
		if err != nil {
			return nil, err
		}
		if chunk == nil {
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output, r.err
}

// LastSequence returns the Sequence of the last chunk read, or the
// afterSequence the run started from before any: attach again after it
// (Client.Attach) to receive the rest exactly once.
func (r *AttachedRun) LastSequence() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Text returns the text of the model chunks read so far: the concatenated
// text parts of their content, without the chunks a takeover superseded (on
// reading a chunk with Takeover set, the text of the model chunks read before
// it whose Sequence is greater than Takeover.SupersededAfter is dropped). So
// after a takeover Text is the rerun turn's text once, not the cut attempt
// followed by the rerun. Only this run's chunks count: text a previous
// attach read is not dropped here.
func (r *AttachedRun) Text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, t := range r.texts {
		b.WriteString(t.text)
	}
	return b.String()
}

// chunkText is the text of one model chunk, with its sequence.
type chunkText struct {
	seq  uint32
	text string
}

// Done reports whether the run has ended (with its output or an error).
func (r *AttachedRun) Done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

// Close stops the stream; it does not stop the detached work (Client.Abort
// does). Reading after Close fails with connect.CodeCanceled unless the run
// had already ended. Close is idempotent.
func (r *AttachedRun) Close() error {
	r.cancel()
	return nil
}

// next reads one chunk. It returns (nil, nil) once the output arrived, and
// the run's error (every time) once it failed.
func (r *AttachedRun) next() (*agentdv1.AgentStreamChunk, error) {
	r.recvMu.Lock()
	defer r.recvMu.Unlock()
	r.mu.Lock()
	done, err := r.done, r.err
	r.mu.Unlock()
	if done {
		return nil, err
	}
	for {
		chunk, err := r.receive()
		if err == nil {
			return chunk, nil
		}
		if !r.reopen(err) {
			if errors.Is(err, errStreamEnded) {
				err = connect.NewError(connect.CodeDataLoss, errors.New("agentd: the AttachInvocation stream ended without an output"))
			}
			r.finish(nil, err)
			return nil, err
		}
	}
}

// receive reads one response from the stream: a chunk, or (nil, nil) once
// the output arrived, or the stream's error (errStreamEnded when it ended
// without an output).
func (r *AttachedRun) receive() (*agentdv1.AgentStreamChunk, error) {
	for r.stream.Receive() {
		msg := r.stream.Msg()
		if chunk := msg.GetChunk(); chunk != nil {
			r.streak.reset()
			r.mu.Lock()
			if seq := chunk.GetSequence(); seq != 0 {
				r.last = seq
			}
			if mc := chunk.GetModelChunk(); mc != nil {
				if text := Text(mc.GetContent()); text != "" {
					r.texts = append(r.texts, chunkText{seq: chunk.GetSequence(), text: text})
				}
			}
			if takeover := chunk.GetTakeover(); takeover != nil {
				// The chunks of the cut turn are superseded: the turn runs again.
				after := takeover.GetSupersededAfter()
				kept := r.texts[:0]
				for _, t := range r.texts {
					if t.seq <= after {
						kept = append(kept, t)
					}
				}
				r.texts = kept
			}
			r.mu.Unlock()
			return chunk, nil
		}
		if out := msg.GetOutput(); out != nil {
			// The output is the last response: read to the end so the trailers
			// (and any late status) are consumed before releasing the stream.
			for r.stream.Receive() {
			}
			r.finish(out, nil)
			return nil, nil
		}
	}
	if err := r.stream.Err(); err != nil {
		return nil, err
	}
	return nil, errStreamEnded
}

// finish records the end of the run and releases the stream.
func (r *AttachedRun) finish(out *agentdv1.AgentOutput, err error) {
	if r.stream != nil {
		_ = r.stream.Close()
	}
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.output, r.err, r.done = out, err, true
}
