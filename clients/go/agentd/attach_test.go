package agentd_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// detachSlowRun runs one slow turn of assistant detached from the start (its
// whole stream is recorded, from sequence 1) and returns the detach output.
func detachSlowRun(t *testing.T, ctx context.Context, client *agentd.Client, text string, delayMs int) *agentdv1.AgentOutput {
	t.Helper()
	input := slowInput(t, text, delayMs)
	input.Detach = true
	out, err := client.Run(ctx, "assistant", agentd.ChatOptions{}, input)
	if err != nil {
		t.Fatalf("Run detached: %v", err)
	}
	if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_DETACHED || out.GetSnapshotId() == "" {
		t.Fatalf("detach output: finish %v snapshot %q, want DETACHED with a pending snapshot", out.GetFinishReason(), out.GetSnapshotId())
	}
	return out
}

func TestAttachAgainAfterTheLastSequenceGetsTheRestOnceThenTheOutput(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	words := "one two three four five six seven eight"
	out := detachSlowRun(t, ctx, client, words, 40)
	pending := out.GetSnapshotId()

	attachCtx, drop := context.WithCancel(ctx)
	defer drop()
	first := client.Attach(attachCtx, "assistant", pending, 0)
	var sequences []uint32
	var text string
	for chunk, err := range first.Chunks() {
		if err != nil {
			t.Fatalf("first Attach: %v", err)
		}
		sequences = append(sequences, chunk.GetSequence())
		text += agentd.Text(chunk.GetModelChunk().GetContent())
		if len(sequences) == 3 {
			break
		}
	}
	drop() // the connection drops
	if _, err := first.Output(); connect.CodeOf(err) != connect.CodeCanceled {
		t.Errorf("Output after the context was cancelled: %v, want code %v", err, connect.CodeCanceled)
	}
	last := first.LastSequence()
	if len(sequences) != 3 || last != sequences[2] || sequences[0] != 1 {
		t.Fatalf("first attach: sequences %v, LastSequence %d; want 3 chunks from 1 and the last one's sequence", sequences, last)
	}

	rest := client.Attach(ctx, "assistant", pending, last)
	defer rest.Close()
	var lastChunk *agentdv1.AgentStreamChunk
	for chunk, err := range rest.Chunks() {
		if err != nil {
			t.Fatalf("second Attach: %v", err)
		}
		if lastChunk == nil && chunk.GetSequence() != last+1 {
			t.Errorf("second attach starts at sequence %d, want %d", chunk.GetSequence(), last+1)
		}
		sequences = append(sequences, chunk.GetSequence())
		text += agentd.Text(chunk.GetModelChunk().GetContent())
		lastChunk = chunk
	}
	ended, err := rest.Output()
	if err != nil {
		t.Fatalf("second Attach output: %v", err)
	}
	for i, seq := range sequences {
		if seq != uint32(i+1) {
			t.Fatalf("sequences = %v, want 1, 2, … with no gap and no repeat", sequences)
		}
	}
	if want := "echo: " + words; text != want || first.Text()+rest.Text() != want {
		t.Errorf("streamed text = %q (Text: %q + %q), want %q", text, first.Text(), rest.Text(), want)
	}
	if lastChunk.GetTurnEnd().GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
		t.Errorf("last chunk = %v, want the TurnEnd with FINISH_REASON_STOP", lastChunk)
	}
	if ended.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP || ended.GetSnapshotId() != pending {
		t.Errorf("output: finish %v snapshot %q, want STOP with the pending snapshot %q", ended.GetFinishReason(), ended.GetSnapshotId(), pending)
	}
	if rest.LastSequence() != uint32(len(sequences)) || !rest.Done() {
		t.Errorf("LastSequence = %d (done %v), want %d and done", rest.LastSequence(), rest.Done(), len(sequences))
	}

	// Once the work ended, attaching from 0 replays every recorded chunk;
	// Output alone reads (and counts) them.
	replay := client.Attach(ctx, "assistant", pending, 0)
	again, err := replay.Output()
	if err != nil {
		t.Fatalf("replay Output: %v", err)
	}
	if replay.LastSequence() != uint32(len(sequences)) || replay.Text() != "echo: "+words || again.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
		t.Errorf("replay: LastSequence %d text %q finish %v, want %d, %q, STOP", replay.LastSequence(), replay.Text(), again.GetFinishReason(), len(sequences), "echo: "+words)
	}
}

func TestAttachToAnUnknownSnapshotIsNotFound(t *testing.T) {
	ctx := testContext(t)
	run := newClient(t).Attach(ctx, "assistant", "0190bbbb-0000-7000-8000-000000000000", 0)
	var errs []error
	for chunk, err := range run.Chunks() {
		if chunk != nil {
			t.Errorf("unexpected chunk %v", chunk)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || connect.CodeOf(errs[0]) != connect.CodeNotFound {
		t.Fatalf("Chunks yielded errors %v, want one with code %v", errs, connect.CodeNotFound)
	}
	if _, err := run.Output(); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("Output: %v, want code %v", err, connect.CodeNotFound)
	}
	if run.LastSequence() != 0 {
		t.Errorf("LastSequence = %d, want 0", run.LastSequence())
	}
}
