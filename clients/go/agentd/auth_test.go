package agentd_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// authURL returns the base URL of an agentd started with --auth-tokens
// (plaintext HTTP/2).
func authURL(t *testing.T) string {
	t.Helper()
	pki := testCerts(t)
	return "http://" + namedServerAddr(t, "auth", func() ([]string, error) {
		return []string{"--auth-tokens", pki.tokensFile}, nil
	})
}

// twoTurnChat holds a two-turn conversation with assistant and returns its
// output, failing the test unless both turns echo their input.
func twoTurnChat(t *testing.T, ctx context.Context, client *agentd.Client) *agentdv1.AgentOutput {
	t.Helper()
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	first := runTurn(t, ctx, conv, "one")
	second := runTurn(t, ctx, conv, "two")
	if first.Text() != "echo: one" || first.Index() != 0 || second.Text() != "echo: two" || second.Index() != 1 {
		t.Errorf("turns = (%d %q), (%d %q), want (0 \"echo: one\"), (1 \"echo: two\")", first.Index(), first.Text(), second.Index(), second.Text())
	}
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatalf("Output: %v", err)
	}
	if out.GetSessionId() == "" || out.GetSnapshotId() != second.SnapshotID() || agentd.MessageText(out.GetMessage()) != "echo: two" {
		t.Errorf("output = %v, want session, snapshot %s and \"echo: two\"", out, second.SnapshotID())
	}
	return out
}

// watchErr returns the error that ends a WatchSnapshot of snapshotID (nil if
// the watch ends without one).
func watchErr(ctx context.Context, client *agentd.Client, snapshotID string) error {
	for _, err := range client.WatchSnapshot(ctx, "assistant", snapshotID) {
		if err != nil {
			return err
		}
	}
	return nil
}

// assertNoSecret fails if err's message contains secret.
func assertNoSecret(t *testing.T, err error, secret string) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("error %q contains the token", err)
	}
}

func TestCallsWithoutATokenFailUnauthenticated(t *testing.T) {
	ctx := testContext(t)
	client := agentd.NewClient(authURL(t))

	_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
	assertCode(t, err, connect.CodeUnauthenticated)
	_, err = client.ListAgents(ctx)
	assertCode(t, err, connect.CodeUnauthenticated)
	assertCode(t, watchErr(ctx, client, "any-snapshot"), connect.CodeUnauthenticated)
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	assertCode(t, firstTurnErr(ctx, conv, "hi"), connect.CodeUnauthenticated)
}

func TestCallsWithAWrongTokenFailUnauthenticated(t *testing.T) {
	ctx := testContext(t)
	const wrong = "tok-not-in-the-file-51a9"
	for _, proto := range []struct {
		name string
		opt  agentd.Option
	}{{"grpc", agentd.WithGRPC()}, {"connect", agentd.WithConnectProtocol()}} {
		t.Run(proto.name, func(t *testing.T) {
			client := agentd.NewClient(authURL(t), proto.opt, agentd.WithBearerToken(wrong))
			_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
			assertCode(t, err, connect.CodeUnauthenticated)
			assertNoSecret(t, err, wrong)
			conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
			err = firstTurnErr(ctx, conv, "hi")
			assertCode(t, err, connect.CodeUnauthenticated)
			assertNoSecret(t, err, wrong)
		})
	}
}

func TestBearerTokenHoldsATwoTurnChat(t *testing.T) {
	ctx := testContext(t)
	for _, proto := range []struct {
		name string
		opt  agentd.Option
	}{{"grpc", agentd.WithGRPC()}, {"connect", agentd.WithConnectProtocol()}} {
		t.Run(proto.name, func(t *testing.T) {
			client := agentd.NewClient(authURL(t), proto.opt, agentd.WithBearerToken(tokenAlice))
			// A bidi stream, a unary call and a server stream, each with the token.
			out := twoTurnChat(t, ctx, client)
			snap, err := client.GetSnapshot(ctx, "assistant", out.GetSnapshotId())
			if err != nil {
				t.Fatalf("GetSnapshot with the token: %v", err)
			}
			if snap.GetSessionId() != out.GetSessionId() || snap.GetTurnIndex() != 1 {
				t.Errorf("snapshot = session %s turn %d, want session %s turn 1", snap.GetSessionId(), snap.GetTurnIndex(), out.GetSessionId())
			}
			if err := watchErr(ctx, client, out.GetSnapshotId()); err != nil {
				t.Errorf("WatchSnapshot with the token: %v", err)
			}
		})
	}
}

func TestTokenSourceIsAskedForEveryCall(t *testing.T) {
	ctx := testContext(t)
	var calls atomic.Int32
	client := agentd.NewClient(authURL(t), agentd.WithTokenSource(func(callCtx context.Context) (string, error) {
		if callCtx == nil {
			t.Error("token source called without a context")
		}
		calls.Add(1)
		return tokenAlice, nil
	}))
	out := twoTurnChat(t, ctx, client)
	if _, err := client.GetLatestSnapshot(ctx, "assistant", out.GetSessionId()); err != nil {
		t.Fatalf("GetLatestSnapshot: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("token source called %d times for one Chat and one GetLatestSnapshot, want 2", n)
	}
}

func TestTokenSourceErrorsFailTheCallUnauthenticated(t *testing.T) {
	ctx := testContext(t)
	vaultDown := errors.New("vault is down")
	client := agentd.NewClient(authURL(t), agentd.WithTokenSource(func(context.Context) (string, error) { return "", vaultDown }))
	_, err := client.RunText(ctx, "assistant", agentd.ChatOptions{}, "hi")
	assertCode(t, err, connect.CodeUnauthenticated)
	if !errors.Is(err, vaultDown) {
		t.Errorf("RunText error %v does not wrap the token source's error", err)
	}
	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
	err = firstTurnErr(ctx, conv, "hi")
	assertCode(t, err, connect.CodeUnauthenticated)
	if !errors.Is(err, vaultDown) {
		t.Errorf("Chat error %v does not wrap the token source's error", err)
	}
	_, err = agentd.NewClient(authURL(t), agentd.WithBearerToken("")).ListAgents(ctx)
	assertCode(t, err, connect.CodeUnauthenticated)
}

// assertSessionOfOtherTenantIsNotFound checks every way other can reach the
// session of out: read, list, watch, abort, resume by session and by
// snapshot. Each fails with NOT_FOUND, as for an unknown ID.
func assertSessionOfOtherTenantIsNotFound(t *testing.T, ctx context.Context, other *agentd.Client, out *agentdv1.AgentOutput) {
	t.Helper()
	sessionID, snapshotID := out.GetSessionId(), out.GetSnapshotId()
	_, err := other.GetSnapshot(ctx, "assistant", snapshotID)
	assertCode(t, err, connect.CodeNotFound)
	_, err = other.GetLatestSnapshot(ctx, "assistant", sessionID)
	assertCode(t, err, connect.CodeNotFound)
	_, _, err = other.ListSnapshots(ctx, "assistant", sessionID, agentd.ListOptions{})
	assertCode(t, err, connect.CodeNotFound)
	assertCode(t, watchErr(ctx, other, snapshotID), connect.CodeNotFound)
	_, err = other.Abort(ctx, "assistant", snapshotID)
	assertCode(t, err, connect.CodeNotFound)
	_, err = other.RunText(ctx, "assistant", agentd.ChatOptions{SnapshotID: snapshotID}, "intrude")
	assertCode(t, err, connect.CodeNotFound)
	conv := openChat(t, ctx, other, "assistant", agentd.ChatOptions{SessionID: sessionID})
	assertCode(t, firstTurnErr(ctx, conv, "intrude"), connect.CodeNotFound)
}

// assertSessionUnchanged checks, as owner, that the latest snapshot of out's
// session is still out's last snapshot (turn 1).
func assertSessionUnchanged(t *testing.T, ctx context.Context, owner *agentd.Client, out *agentdv1.AgentOutput) {
	t.Helper()
	snap, err := owner.GetLatestSnapshot(ctx, "assistant", out.GetSessionId())
	if err != nil {
		t.Fatalf("owner's GetLatestSnapshot: %v", err)
	}
	if snap.GetSnapshotId() != out.GetSnapshotId() || snap.GetTurnIndex() != 1 {
		t.Errorf("after the other tenant's calls the latest snapshot is %s (turn %d), want %s (turn 1)", snap.GetSnapshotId(), snap.GetTurnIndex(), out.GetSnapshotId())
	}
}

func TestAnotherTenantsSessionIsNotFound(t *testing.T) {
	ctx := testContext(t)
	alice := agentd.NewClient(authURL(t), agentd.WithBearerToken(tokenAlice))
	bob := agentd.NewClient(authURL(t), agentd.WithBearerToken(tokenBob))
	out := twoTurnChat(t, ctx, alice)

	assertSessionOfOtherTenantIsNotFound(t, ctx, bob, out)
	assertSessionUnchanged(t, ctx, alice, out)

	// Sessions belong to the tenant, not the subject: alice2 (tenant-a)
	// reads and continues alice's session.
	alice2 := agentd.NewClient(authURL(t), agentd.WithBearerToken(tokenAlice2))
	reply, err := alice2.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: out.GetSessionId()}, "three")
	if err != nil {
		t.Fatalf("same tenant, other subject: RunText on the session: %v", err)
	}
	if reply.GetSessionId() != out.GetSessionId() || agentd.MessageText(reply.GetMessage()) != "echo: three" {
		t.Errorf("same tenant resume = %v", reply)
	}
}
