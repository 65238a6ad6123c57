package agentd_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// Cancel and steer a running turn (issue 41), against a real agentd serving
// test/fixtures/agents.ts (fixture agents: test/fixtures/turn-control-agents.ts).

// snapshotHistory returns the text of each message of a snapshot's state.
func snapshotHistory(t *testing.T, client *agentd.Client, agent, snapshotID string) []string {
	t.Helper()
	snap, err := client.GetSnapshot(testContext(t), agent, snapshotID)
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	var texts []string
	for _, m := range snap.GetState().GetMessages() {
		texts = append(texts, agentd.Text(m.GetContent()))
	}
	return texts
}

// firstChunk reads a turn until its first chunk that satisfies ok.
func firstChunk(t *testing.T, turn *agentd.Turn, ok func(*agentdv1.AgentStreamChunk) bool) {
	t.Helper()
	for chunk, err := range turn.Chunks() {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		if ok(chunk) {
			return
		}
	}
	t.Fatal("the turn ended before the awaited chunk")
}

func anyChunk(*agentdv1.AgentStreamChunk) bool { return true }

func TestCancelEndsTheRunningTurnAndTheNextRuns(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "slow", agentd.ChatOptions{})
	slow, err := conv.SendText(ctx, "slow story")
	if err != nil {
		t.Fatal(err)
	}
	firstChunk(t, slow, anyChunk)
	// ABORTED, not the STOP of a turn that streamed its ~2 s to the end: the cancel took, however
	// slowly a loaded machine delivered it.
	ack, err := slow.Cancel(ctx)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if ack.GetResult() != agentdv1.InputAckResult_INPUT_ACK_RESULT_CANCELLED || ack.GetTurnIndex() != 0 {
		t.Fatalf("ack = %v, want CANCELLED of turn 0", ack)
	}
	end, err := slow.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_ABORTED {
		t.Fatalf("finish reason = %v, want ABORTED", end.GetFinishReason())
	}
	next, err := conv.SendText(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next.Wait(); err != nil || !strings.Contains(next.Text(), "reply: hello") {
		t.Fatalf("next turn: %q, %v", next.Text(), err)
	}
	if _, err := conv.Output(ctx); err != nil {
		t.Fatal(err)
	}
	got := snapshotHistory(t, client, "slow", next.SnapshotID())
	if strings.Join(got, "|") != "hello|reply: hello" {
		t.Fatalf("history = %q, want only the next turn", got)
	}
}

func TestCancelOfAnEndedTurnIsNothingToCancel(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "slow", agentd.ChatOptions{})
	turn, err := conv.SendText(ctx, "quick")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := turn.Wait(); err != nil {
		t.Fatal(err)
	}
	ack, err := turn.Cancel(ctx)
	if err != nil || ack.GetResult() != agentdv1.InputAckResult_INPUT_ACK_RESULT_NOTHING_TO_CANCEL {
		t.Fatalf("Cancel = %v, %v; want NOTHING_TO_CANCEL", ack, err)
	}
}

func TestCancelOfAQueuedTurnIsFailedPrecondition(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "slow", agentd.ChatOptions{})
	running, err := conv.SendText(ctx, "slow first")
	if err != nil {
		t.Fatal(err)
	}
	queued, err := conv.SendText(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queued.Cancel(ctx); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("Cancel of a queued turn: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := running.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := queued.Wait(); err != nil || !strings.Contains(queued.Text(), "reply: second") {
		t.Fatalf("queued turn: %q, %v", queued.Text(), err)
	}
}

func TestSteerReachesTheNextModelCallOfAToolLoop(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "steerable", agentd.ChatOptions{})
	turn, err := conv.SendText(ctx, `call wait {"ms":800}`)
	if err != nil {
		t.Fatal(err)
	}
	firstChunk(t, turn, func(c *agentdv1.AgentStreamChunk) bool {
		for _, p := range c.GetModelChunk().GetContent() {
			if p.GetToolRequest() != nil {
				return true
			}
		}
		return false
	})
	res, err := conv.SteerText(ctx, "mention pears")
	if err != nil {
		t.Fatalf("Steer: %v", err)
	}
	if res.Ack.GetResult() != agentdv1.InputAckResult_INPUT_ACK_RESULT_STEERED || res.Turn != nil {
		t.Fatalf("steer = %v (turn %v), want STEERED", res.Ack, res.Turn)
	}
	if _, err := turn.Wait(); err != nil || !strings.Contains(turn.Text(), "scripted: mention pears") {
		t.Fatalf("turn: %q, %v; want the model to answer the steer", turn.Text(), err)
	}
	got := snapshotHistory(t, client, "steerable", turn.SnapshotID())
	if n := len(got); n < 2 || got[n-2] != "mention pears" || got[n-1] != "scripted: mention pears" {
		t.Fatalf("history = %q, want the steer then its answer last", got)
	}
}

func TestSteerAfterTheTurnEndedRunsAsTheNextTurn(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "steerable", agentd.ChatOptions{})
	first, err := conv.SendText(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := conv.SteerText(ctx, "later")
	if err != nil {
		t.Fatal(err)
	}
	if res.Ack.GetResult() != agentdv1.InputAckResult_INPUT_ACK_RESULT_QUEUED || res.Turn == nil {
		t.Fatalf("steer = %v, want QUEUED with a turn", res.Ack)
	}
	end, err := res.Turn.Wait()
	if err != nil || res.Turn.Text() != "scripted: later" || end.GetTurnIndex() != 1 {
		t.Fatalf("queued steer turn: %q (index %d), %v", res.Turn.Text(), end.GetTurnIndex(), err)
	}
}

func TestSendInvocationInputCancelsDetachedWork(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	conv := openChat(t, ctx, client, "slow", agentd.ChatOptions{})
	turn, err := conv.SendText(ctx, "slow job")
	if err != nil {
		t.Fatal(err)
	}
	firstChunk(t, turn, anyChunk)
	out, err := conv.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := client.SendInvocationInput(ctx, "slow", out.GetSnapshotId(), &agentdv1.AgentInput{Cancel: true})
	if err != nil || ack.GetResult() != agentdv1.InputAckResult_INPUT_ACK_RESULT_CANCELLED {
		t.Fatalf("SendInvocationInput = %v, %v; want CANCELLED", ack, err)
	}
}
