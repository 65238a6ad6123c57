package agentd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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

// startTakeoverPair starts two agentd servers, instances A and B, on one fresh
// SQLite store, with a short heartbeat (a silent run is presumed dead after
// 1 s), and stops them when the test ends.
func startTakeoverPair(t *testing.T) (a, b *serverProcess) {
	t.Helper()
	store := "sqlite:" + filepath.Join(t.TempDir(), "agentd.db") // removed after the servers stopped (cleanups run last first)
	start := func(id string) (*serverProcess, error) {
		return startServer("--store", store, "--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "1000", "--instance-id", id)
	}
	type started struct {
		proc *serverProcess
		err  error
	}
	bc := make(chan started, 1)
	go func() { p, err := start("B"); bc <- started{p, err} }()
	a, errA := start("A")
	sb := <-bc
	if a != nil {
		t.Cleanup(a.kill)
	}
	if sb.proc != nil {
		t.Cleanup(sb.proc.stop)
	}
	if errA != nil || sb.err != nil {
		t.Fatalf("start agentd A: %v; B: %v", errA, sb.err)
	}
	return a, sb.proc
}

func TestAttachAfterATakeoverTextDropsTheCutTurnsSupersededText(t *testing.T) {
	a, b := startTakeoverPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	onA := agentd.NewClient(fmt.Sprintf("http://127.0.0.1:%d", a.port))
	onB := agentd.NewClient(fmt.Sprintf("http://127.0.0.1:%d", b.port))
	words := "one two three four five six seven eight nine ten eleven twelve"
	pending := detachSlowRun(t, ctx, onA, words, 150).GetSnapshotId()

	// Follow the work on A until 4 model chunks were streamed, then kill A.
	first := onA.Attach(ctx, "assistant", pending, 0)
	modelChunks := 0
	for chunk, err := range first.Chunks() {
		if err != nil {
			t.Fatalf("Attach on A: %v", err)
		}
		if chunk.GetModelChunk() != nil {
			modelChunks++
		}
		if modelChunks >= 4 {
			break
		}
	}
	if modelChunks < 4 {
		t.Fatalf("Attach on A ended after %d model chunks, want at least 4 before A is killed", modelChunks)
	}
	a.kill()
	_ = first.Close()

	// B takes the work over once A's heartbeat lapsed (about 1 s); attaching
	// from the start replays A's recorded chunks, the marker, then the rerun.
	run := onB.Attach(ctx, "assistant", pending, 0)
	defer run.Close()
	var chunks []*agentdv1.AgentStreamChunk
	for chunk, err := range run.Chunks() {
		if err != nil {
			t.Fatalf("Attach on B: %v", err)
		}
		chunks = append(chunks, chunk)
	}
	out, err := run.Output()
	if err != nil {
		t.Fatalf("Attach on B, output: %v", err)
	}

	markerAt := -1
	for i, chunk := range chunks {
		if chunk.GetTakeover() != nil {
			if markerAt >= 0 {
				t.Fatalf("a second takeover marker at chunk %d (the first at %d)", i, markerAt)
			}
			markerAt = i
		}
	}
	if markerAt < 0 {
		t.Fatalf("no chunk has Takeover set among %d chunks", len(chunks))
	}
	after := chunks[markerAt].GetTakeover().GetSupersededAfter()
	superseded := ""
	for _, chunk := range chunks[:markerAt] {
		if chunk.GetSequence() > after {
			superseded += agentd.Text(chunk.GetModelChunk().GetContent())
		}
	}
	if superseded == "" {
		t.Fatalf("no model text before the takeover marker is superseded (SupersededAfter %d): the test does not exercise dropping it", after)
	}
	want := "echo: " + words
	if got := run.Text(); got != want {
		t.Errorf("Text() = %q, want %q (the cut attempt streamed %q)", got, want, superseded)
	}
	if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP || agentd.MessageText(out.GetMessage()) != want {
		t.Errorf("output: finish %v text %q, want STOP and %q", out.GetFinishReason(), agentd.MessageText(out.GetMessage()), want)
	}
}
