package agentd_test

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// assertCode fails unless err is a *connect.Error with code want.
func assertCode(t *testing.T, err error, want connect.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want code %s", want)
	}
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %T %v, want a *connect.Error", err, err)
	}
	if cerr.Code() != want {
		t.Fatalf("code = %v (%v), want %v", cerr.Code(), err, want)
	}
}

// firstTurnErr sends text and reads its turn, returning the error of
// whichever call reported the stream's failure (nil if none did).
func firstTurnErr(ctx context.Context, conv *agentd.Conversation, text string) error {
	turn, err := conv.SendText(ctx, text)
	if err != nil {
		return err
	}
	_, err = turn.Wait()
	return err
}

func TestChatStreamFailuresCarryTheirStatusCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent string
		opts  agentd.ChatOptions
		want  connect.Code
	}{
		{"UnknownAgentFailsWithNotFound", "no-such-agent", agentd.ChatOptions{}, connect.CodeNotFound},
		{"StateSentToServerManagedAgentFailsWithFailedPrecondition", "assistant", agentd.ChatOptions{State: &agentdv1.SessionState{}}, connect.CodeFailedPrecondition},
		{"SessionIDSentToClientManagedAgentFailsWithFailedPrecondition", "notes", agentd.ChatOptions{SessionID: "some-session"}, connect.CodeFailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			conv := openChat(t, ctx, newClient(t), tc.agent, tc.opts)
			assertCode(t, firstTurnErr(ctx, conv, "hello"), tc.want)
		})
	}
}

func TestOutputReportsTheStreamErrorToo(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "no-such-agent", agentd.ChatOptions{})
	_, err := conv.Output(ctx)
	assertCode(t, err, connect.CodeNotFound)
}

func TestRunWithUnknownAgentFailsWithNotFound(t *testing.T) {
	_, err := newClient(t).RunText(testContext(t), "no-such-agent", agentd.ChatOptions{}, "hello")
	assertCode(t, err, connect.CodeNotFound)
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("connect.CodeOf(err) = %v", connect.CodeOf(err))
	}
}

func TestGetUnknownSnapshotFailsWithNotFound(t *testing.T) {
	_, err := newClient(t).GetSnapshot(testContext(t), "assistant", "no-such-snapshot")
	assertCode(t, err, connect.CodeNotFound)
}

func TestDetachAfterAStreamErrorReportsThatError(t *testing.T) {
	ctx := testContext(t)
	conv := openChat(t, ctx, newClient(t), "no-such-agent", agentd.ChatOptions{})
	assertCode(t, firstTurnErr(ctx, conv, "hello"), connect.CodeNotFound)
	_, err := conv.Detach(ctx)
	assertCode(t, err, connect.CodeNotFound)
}
