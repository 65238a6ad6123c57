package agentd_test

import (
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

func TestChatWithUnknownAgentFailsWithNotFound(t *testing.T) {
	ctx := testContext(t)
	conv, err := newClient(t).Chat(ctx, "no-such-agent", agentd.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	turn, err := conv.SendText(ctx, "hello")
	if err == nil {
		_, err = turn.Wait()
	}
	assertCode(t, err, connect.CodeNotFound)
}

func TestStateSentToServerManagedAgentFailsWithFailedPrecondition(t *testing.T) {
	ctx := testContext(t)
	conv, err := newClient(t).Chat(ctx, "assistant", agentd.ChatOptions{State: &agentdv1.SessionState{}})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	turn, err := conv.SendText(ctx, "hello")
	if err == nil {
		_, err = turn.Wait()
	}
	assertCode(t, err, connect.CodeFailedPrecondition)
}

func TestOutputReportsTheStreamErrorToo(t *testing.T) {
	ctx := testContext(t)
	conv, err := newClient(t).Chat(ctx, "no-such-agent", agentd.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conv.Output(ctx)
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
	conv, err := newClient(t).Chat(ctx, "no-such-agent", agentd.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	turn, err := conv.SendText(ctx, "hello")
	if err == nil {
		_, err = turn.Wait()
	}
	assertCode(t, err, connect.CodeNotFound)
	_, err = conv.Detach(ctx)
	assertCode(t, err, connect.CodeNotFound)
}
