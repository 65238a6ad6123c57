package agentd_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// testContext bounds one test's calls to the server.
func testContext(t *testing.T) context.Context {
	t.Helper()
	// A safety net, not a measure: most tests take it before their server starts (servers with
	// their own flags start at first use), and on a loaded machine with the suite's servers starting
	// in parallel that start alone took most of 30 s (calls then failed DEADLINE_EXCEEDED).
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a client of the shared agentd server (its own HTTP/2
// connection).
func newClient(t *testing.T, opts ...agentd.Option) *agentd.Client {
	t.Helper()
	return agentd.NewClient(agentdURL(t), opts...)
}

// openChat opens a conversation that is closed when the test ends (a no-op
// once Output or Detach returned), failing the test if Chat fails.
func openChat(t *testing.T, ctx context.Context, client *agentd.Client, agent string, opts agentd.ChatOptions) *agentd.Conversation {
	t.Helper()
	conv, err := client.Chat(ctx, agent, opts)
	if err != nil {
		t.Fatalf("Chat(%q): %v", agent, err)
	}
	t.Cleanup(func() { _ = conv.Close() })
	return conv
}

// runTurn sends text and reads the whole turn, failing the test on errors.
func runTurn(t *testing.T, ctx context.Context, conv *agentd.Conversation, text string) *agentd.Turn {
	t.Helper()
	turn, err := conv.SendText(ctx, text)
	if err != nil {
		t.Fatalf("SendText(%q): %v", text, err)
	}
	if _, err := turn.Wait(); err != nil {
		t.Fatalf("turn %q: %v", text, err)
	}
	return turn
}

func TestChatStreamsEachTurnInChunksEndingWithTurnEnd(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})

	turn, err := conv.SendText(ctx, "hello there")
	if err != nil {
		t.Fatal(err)
	}
	var modelChunks, ends int
	var last *agentdv1.AgentStreamChunk
	for chunk, err := range turn.Chunks() {
		if err != nil {
			t.Fatalf("turn chunks: %v", err)
		}
		if chunk.GetModelChunk() != nil {
			modelChunks++
		}
		if chunk.GetTurnEnd() != nil {
			ends++
		}
		last = chunk
	}
	if modelChunks < 2 {
		t.Errorf("model chunks = %d, want the reply streamed in several chunks", modelChunks)
	}
	if ends != 1 || last.GetTurnEnd() == nil {
		t.Errorf("TurnEnd chunks = %d (last chunk %v), want exactly one, last", ends, last)
	}
	if got, want := turn.Text(), "echo: hello there"; got != want {
		t.Errorf("turn text = %q, want %q", got, want)
	}
}

func TestChatTwoTurnsReportTurnIndexesAndSnapshots(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})

	first := runTurn(t, ctx, conv, "one")
	second := runTurn(t, ctx, conv, "two")

	for i, turn := range []*agentd.Turn{first, second} {
		if turn.Index() != int32(i) {
			t.Errorf("turn %d: index = %d", i, turn.Index())
		}
		if turn.FinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
			t.Errorf("turn %d: finish reason = %v, want STOP", i, turn.FinishReason())
		}
		if turn.SnapshotID() == "" {
			t.Errorf("turn %d: no snapshot ID", i)
		}
	}
	if first.SnapshotID() == second.SnapshotID() {
		t.Errorf("both turns have snapshot %q, want one per turn", first.SnapshotID())
	}
	if second.Text() != "echo: two" {
		t.Errorf("second turn text = %q, want %q", second.Text(), "echo: two")
	}
	if conv.SnapshotID() != second.SnapshotID() {
		t.Errorf("conversation snapshot = %q, want the last turn's %q", conv.SnapshotID(), second.SnapshotID())
	}
}

func TestOutputReturnsSessionLastSnapshotAndLastMessage(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "one")
	last := runTurn(t, ctx, conv, "two")

	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatalf("Output: %v", err)
	}
	if out.GetSessionId() == "" || conv.SessionID() != out.GetSessionId() {
		t.Errorf("output session = %q, conversation session = %q; want the same non-empty ID", out.GetSessionId(), conv.SessionID())
	}
	if out.GetSnapshotId() != last.SnapshotID() {
		t.Errorf("output snapshot = %q, want last turn's %q", out.GetSnapshotId(), last.SnapshotID())
	}
	if got := agentd.MessageText(out.GetMessage()); got != "echo: two" {
		t.Errorf("output message = %q, want %q", got, "echo: two")
	}
	if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
		t.Errorf("output finish reason = %v, want STOP", out.GetFinishReason())
	}
	again, err := conv.Output(ctx)
	if err != nil || again != out {
		t.Errorf("second Output = %v, %v; want the same output", again, err)
	}
}

func TestSendAfterOutputFailsWithFailedPrecondition(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})
	runTurn(t, ctx, conv, "one")
	if _, err := conv.Output(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := conv.SendText(ctx, "too late")
	assertCode(t, err, connect.CodeFailedPrecondition)
}

func TestCancellingASendContextAfterItsTurnKeepsTheConversation(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})
	turnCtx, cancel := context.WithCancel(ctx)
	runTurn(t, turnCtx, conv, "one")
	cancel()
	if second := runTurn(t, ctx, conv, "two"); second.Text() != "echo: two" {
		t.Errorf("turn after cancelling the first turn's context = %q", second.Text())
	}
}

func TestQueuedInputsEachGetTheirOwnTurn(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "assistant", agentd.ChatOptions{})
	first, err := conv.SendText(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	second, err := conv.SendText(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Wait(); err != nil { // reads the first turn on the way
		t.Fatal(err)
	}
	if !first.Done() || first.Text() != "echo: one" || first.Index() != 0 {
		t.Errorf("first turn: done %v text %q index %d", first.Done(), first.Text(), first.Index())
	}
	if second.Text() != "echo: two" || second.Index() != 1 {
		t.Errorf("second turn: text %q index %d", second.Text(), second.Index())
	}
	var replayed int
	for _, err := range first.Chunks() {
		if err != nil {
			t.Fatal(err)
		}
		replayed++
	}
	if replayed < 2 {
		t.Errorf("replayed %d chunks of the first turn, want them all kept", replayed)
	}
}

func TestSessionIDIsKnownAfterTheFirstTurnOfAFreshSession(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	first := runTurn(t, ctx, conv, "one")
	sessionID := conv.SessionID()
	if sessionID == "" {
		t.Fatal("session ID unknown after the first TurnEnd")
	}
	snap, err := client.GetLatestSnapshot(ctx, "assistant", sessionID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetSnapshotId() != first.SnapshotID() {
		t.Errorf("latest snapshot of session %q = %q, want the first turn's %q", sessionID, snap.GetSnapshotId(), first.SnapshotID())
	}
	if _, err := conv.Output(ctx); err != nil {
		t.Fatal(err)
	}
}
