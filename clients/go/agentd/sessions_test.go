package agentd_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// labelSeq makes the suite labels of concurrent tests distinct.
var labelSeq atomic.Int64

// suiteLabel returns a label value no other test (or earlier run against the
// same server) uses, so a list filtered by it sees this test's sessions only.
func suiteLabel(t *testing.T) string {
	return fmt.Sprintf("go-%d-%d", time.Now().UnixNano(), labelSeq.Add(1))
}

// newSession runs one turn on a new session of agent with opts and returns
// its output.
func newSession(t *testing.T, ctx context.Context, client *agentd.Client, agent string, opts agentd.ChatOptions) *agentdv1.AgentOutput {
	t.Helper()
	out, err := client.RunText(ctx, agent, opts, "hello")
	if err != nil {
		t.Fatalf("RunText(%s, labels %v, ttl %v): %v", agent, opts.Labels, opts.TTL, err)
	}
	if out.GetSessionId() == "" {
		t.Fatalf("RunText(%s) output has no session ID", agent)
	}
	return out
}

// listIDs lists the sessions matching opts (every page) and returns their IDs
// in listing order.
func listIDs(t *testing.T, ctx context.Context, client *agentd.Client, opts agentd.ListSessionsOptions) []string {
	t.Helper()
	var ids []string
	for s, err := range client.ListSessions(ctx, opts) {
		if err != nil {
			t.Fatalf("ListSessions(%+v): %v", opts, err)
		}
		ids = append(ids, s.GetSessionId())
	}
	return ids
}

// sameSet reports whether got and want hold the same IDs, each once.
func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	sort.Strings(g)
	sort.Strings(w)
	return slices.Equal(g, w)
}

func TestSessionsAreListedByLabelAndDeletedOnce(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	suite := suiteLabel(t)
	colors := []string{"red", "red", "blue"}
	outs := make([]*agentdv1.AgentOutput, len(colors))
	ids := make([]string, len(colors))
	for i, color := range colors {
		outs[i] = newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: map[string]string{"suite": suite, "color": color}})
		ids[i] = outs[i].GetSessionId()
	}

	// Every session with the suite label, with its head.
	var listed []*agentdv1.Session
	for s, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite}}) {
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		listed = append(listed, s)
	}
	if got := sessionIDs(listed); !sameSet(got, ids) {
		t.Fatalf("listed by suite label = %q, want %q", got, ids)
	}
	for _, s := range listed {
		i := slices.Index(ids, s.GetSessionId())
		if s.GetAgent() != "assistant" || s.GetLabels()["suite"] != suite || s.GetLabels()["color"] != colors[i] || len(s.GetLabels()) != 2 {
			t.Errorf("session %s: agent %q labels %v, want assistant {suite:%s color:%s}", s.GetSessionId(), s.GetAgent(), s.GetLabels(), suite, colors[i])
		}
		if s.GetTurnCount() != 1 || s.GetHeadSnapshotId() != outs[i].GetSnapshotId() || s.GetHeadStatus() != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED {
			t.Errorf("session %s: turns %d head %s %v, want 1 turn, head %s COMPLETED", s.GetSessionId(), s.GetTurnCount(), s.GetHeadSnapshotId(), s.GetHeadStatus(), outs[i].GetSnapshotId())
		}
		if s.GetCreatedAt() == nil || s.GetUpdatedAt() == nil || s.GetExpiresAt() != nil || s.GetTtl() != nil {
			t.Errorf("session %s: created %v updated %v expires %v ttl %v, want times and no expiry", s.GetSessionId(), s.GetCreatedAt(), s.GetUpdatedAt(), s.GetExpiresAt(), s.GetTtl())
		}
	}

	// Exact match on each given label.
	red := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite, "color": "red"}})
	if !sameSet(red, ids[:2]) {
		t.Errorf("listed by suite and color=red = %q, want %q", red, ids[:2])
	}
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite, "color": "re"}}); len(got) != 0 {
		t.Errorf("listed by color=re = %q, want none (exact match)", got)
	}

	// Delete the first: true once, false after.
	deleted, err := client.DeleteSession(ctx, ids[0])
	if err != nil || !deleted {
		t.Fatalf("DeleteSession = %v, %v; want true", deleted, err)
	}
	deleted, err = client.DeleteSession(ctx, ids[0])
	if err != nil || deleted {
		t.Fatalf("second DeleteSession = %v, %v; want false", deleted, err)
	}

	// The deleted session and its snapshot are gone.
	_, err = client.GetSession(ctx, ids[0])
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.GetLatestSnapshot(ctx, "assistant", ids[0])
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.GetSnapshot(ctx, "assistant", outs[0].GetSnapshotId())
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: ids[0]}, "again")
	assertCode(t, err, connect.CodeNotFound)

	// The rest are intact.
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite}}); !sameSet(got, ids[1:]) {
		t.Errorf("listed after delete = %q, want %q", got, ids[1:])
	}
	for i := 1; i < len(ids); i++ {
		s, err := client.GetSession(ctx, ids[i])
		if err != nil {
			t.Fatalf("GetSession(%s) after deleting another: %v", ids[i], err)
		}
		if s.GetHeadSnapshotId() != outs[i].GetSnapshotId() || s.GetLabels()["color"] != colors[i] {
			t.Errorf("session %s after deleting another: head %s labels %v", ids[i], s.GetHeadSnapshotId(), s.GetLabels())
		}
		reply, err := client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: ids[i]}, "still here")
		if err != nil || agentd.MessageText(reply.GetMessage()) != "echo: still here" {
			t.Errorf("resume %s after deleting another: %v, %v", ids[i], reply, err)
		}
	}

	// Never existed: nothing to delete, not found.
	deleted, err = client.DeleteSession(ctx, "no-such-session")
	if err != nil || deleted {
		t.Errorf("DeleteSession(unknown) = %v, %v; want false", deleted, err)
	}
	_, err = client.GetSession(ctx, "no-such-session")
	assertCode(t, err, connect.CodeNotFound)
}

// sessionIDs returns the IDs of sessions.
func sessionIDs(sessions []*agentdv1.Session) []string {
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.GetSessionId()
	}
	return ids
}

func TestUpdateSessionSetsAndRemovesLabels(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	suite := suiteLabel(t)
	id := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: map[string]string{"suite": suite, "stage": "draft", "owner": "ann"}}).GetSessionId()

	s, err := client.UpdateSession(ctx, id, agentd.UpdateSessionOptions{
		SetLabels:    map[string]string{"stage": "final", "topic": "billing"},
		RemoveLabels: []string{"owner"},
	})
	if err != nil {
		t.Fatalf("UpdateSession: %v", err)
	}
	want := map[string]string{"suite": suite, "stage": "final", "topic": "billing"}
	if !mapsEqual(s.GetLabels(), want) {
		t.Errorf("UpdateSession returned labels %v, want %v", s.GetLabels(), want)
	}
	got, err := client.GetSession(ctx, id)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if !mapsEqual(got.GetLabels(), want) {
		t.Errorf("GetSession labels %v, want %v", got.GetLabels(), want)
	}
	if ids := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite, "stage": "final"}}); !slices.Equal(ids, []string{id}) {
		t.Errorf("listed by the new label = %q, want [%s]", ids, id)
	}
	if ids := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite, "stage": "draft"}}); len(ids) != 0 {
		t.Errorf("listed by the overwritten label = %q, want none", ids)
	}
	if ids := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite, "owner": "ann"}}); len(ids) != 0 {
		t.Errorf("listed by the removed label = %q, want none", ids)
	}

	_, err = client.UpdateSession(ctx, id, agentd.UpdateSessionOptions{SetLabels: map[string]string{"Bad Key": "x"}})
	assertCode(t, err, connect.CodeInvalidArgument)
	_, err = client.UpdateSession(ctx, "no-such-session", agentd.UpdateSessionOptions{SetLabels: map[string]string{"a": "b"}})
	assertCode(t, err, connect.CodeNotFound)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestListSessionsPagesReturnEverySessionOnce(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	suite := suiteLabel(t)
	var ids []string
	for range 5 {
		ids = append(ids, newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: map[string]string{"suite": suite}}).GetSessionId())
	}
	filter := map[string]string{"suite": suite}

	page, next, err := client.ListSessionsPage(ctx, agentd.ListSessionsOptions{Labels: filter, PageSize: 2})
	if err != nil {
		t.Fatalf("ListSessionsPage: %v", err)
	}
	if len(page) != 2 || next == "" {
		t.Fatalf("first page: %d sessions, next %q; want 2 and a next page token", len(page), next)
	}

	var listed []*agentdv1.Session
	for s, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{Labels: filter, PageSize: 2}) {
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		listed = append(listed, s)
	}
	got := sessionIDs(listed)
	if len(got) != len(ids) || !sameSet(got, ids) {
		t.Fatalf("listed with page size 2 = %q, want each of %q once", got, ids)
	}
	// Newest-updated first: the reverse of creation order.
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Errorf("listing order = %q, want newest first %q", got, want)
	}
	for i := 1; i < len(listed); i++ {
		if listed[i].GetUpdatedAt().AsTime().After(listed[i-1].GetUpdatedAt().AsTime()) {
			t.Errorf("session %d updated %v after session %d (%v): not newest-updated first", i, listed[i].GetUpdatedAt().AsTime(), i-1, listed[i-1].GetUpdatedAt().AsTime())
		}
	}

	// Stopping early fetches no more pages and ends cleanly.
	n := 0
	for _, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{Labels: filter, PageSize: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}

	// A bad request is yielded as the iteration's error.
	var iterErr error
	for _, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{PageSize: -1}) {
		iterErr = err
	}
	assertCode(t, iterErr, connect.CodeInvalidArgument)
}

func TestListSessionsFiltersByAgentAndUpdatedAfter(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	suite := suiteLabel(t)
	labels := map[string]string{"suite": suite}
	older := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: labels}).GetSessionId()
	tasks := newSession(t, ctx, client, "tasks", agentd.ChatOptions{Labels: labels}).GetSessionId()
	time.Sleep(50 * time.Millisecond)
	cut := time.Now()
	time.Sleep(50 * time.Millisecond)
	newer := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: labels}).GetSessionId()

	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: labels}); !sameSet(got, []string{older, tasks, newer}) {
		t.Errorf("all = %q, want %q", got, []string{older, tasks, newer})
	}
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Agent: "assistant", Labels: labels}); !sameSet(got, []string{older, newer}) {
		t.Errorf("agent assistant = %q, want %q", got, []string{older, newer})
	}
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Agent: "tasks", Labels: labels}); !slices.Equal(got, []string{tasks}) {
		t.Errorf("agent tasks = %q, want [%s]", got, tasks)
	}
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{UpdatedAfter: cut, Labels: labels}); !slices.Equal(got, []string{newer}) {
		t.Errorf("updated after the cut = %q, want [%s]", got, newer)
	}
}

// sessionTTLURL returns the base URL of an agentd started with
// --session-ttl 2s.
func sessionTTLURL(t *testing.T) string {
	return "http://" + namedServerAddr(t, "session-ttl", func() ([]string, error) {
		return []string{"--session-ttl", "2s"}, nil
	})
}

func TestServerSessionTTLExpiresIdleSessions(t *testing.T) {
	// Timed by the expiries the server reports, never by how fast a loaded machine answers: a read
	// that lands after the session's own expiry proves nothing and is not held against it.
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := agentd.NewClient(sessionTTLURL(t))
	suite := suiteLabel(t)

	conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{Labels: map[string]string{"suite": suite}})
	runTurn(t, ctx, conv, "one")
	afterFirst, err := client.GetSession(ctx, conv.SessionID())
	if err != nil {
		t.Fatalf("GetSession after the first turn: %v", err)
	}
	firstExpiry := afterFirst.GetExpiresAt().AsTime()
	time.Sleep(500 * time.Millisecond)
	second := runTurn(t, ctx, conv, "two")
	out, err := conv.Output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := out.GetSessionId()

	s, err := client.GetSession(ctx, id)
	if err != nil {
		t.Fatalf("GetSession right after the last turn: %v", err)
	}
	if s.GetTtl().AsDuration() != 2*time.Second || s.GetExpiresAt() == nil {
		t.Fatalf("session ttl %v expires %v, want 2s and an expiry", s.GetTtl().AsDuration(), s.GetExpiresAt())
	} else if d := s.GetExpiresAt().AsTime().Sub(s.GetUpdatedAt().AsTime()); d != 2*time.Second {
		t.Errorf("expires_at - updated_at = %v, want 2s", d)
	}
	expiry := s.GetExpiresAt().AsTime()
	if !expiry.After(firstExpiry) {
		t.Errorf("the last turn did not move the expiry on: %v, after the first turn %v", expiry, firstExpiry)
	}

	// Past the first turn's expiry the session is still there: idle time counts from the last update.
	time.Sleep(time.Until(firstExpiry.Add(100 * time.Millisecond)))
	if _, err := client.GetSession(ctx, id); err != nil && time.Now().Before(expiry) {
		t.Fatalf("GetSession after the first turn's expiry, before the last turn's: %v", err)
	}

	time.Sleep(time.Until(expiry.Add(time.Second)))
	_, err = client.GetSession(ctx, id)
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.GetLatestSnapshot(ctx, "assistant", id)
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.GetSnapshot(ctx, "assistant", second.SnapshotID())
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.RunText(ctx, "assistant", agentd.ChatOptions{SessionID: id}, "late")
	assertCode(t, err, connect.CodeNotFound)
	if ids := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: map[string]string{"suite": suite}}); len(ids) != 0 {
		t.Errorf("expired session still listed: %q", ids)
	}
	if deleted, err := client.DeleteSession(ctx, id); err != nil || deleted {
		t.Errorf("DeleteSession of the expired session = %v, %v; want false", deleted, err)
	}
}

func TestSessionTTLFromChatOptionsAndUpdateSession(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := newClient(t) // a server without --session-ttl
	suite := suiteLabel(t)
	labels := map[string]string{"suite": suite}

	expiring := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: labels, TTL: 2 * time.Second}).GetSessionId()
	cleared := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: labels, TTL: 2 * time.Second}).GetSessionId()
	extended := newSession(t, ctx, client, "assistant", agentd.ChatOptions{Labels: labels}).GetSessionId()
	start := time.Now()

	s, err := client.GetSession(ctx, expiring)
	if err != nil {
		t.Fatal(err)
	}
	if s.GetTtl().AsDuration() != 2*time.Second || s.GetExpiresAt() == nil {
		t.Errorf("session created with TTL 2s: ttl %v expires %v", s.GetTtl().AsDuration(), s.GetExpiresAt())
	}

	s, err = client.UpdateSession(ctx, cleared, agentd.UpdateSessionOptions{ClearTTL: true})
	if err != nil {
		t.Fatalf("UpdateSession(ClearTTL): %v", err)
	}
	if s.GetTtl() != nil || s.GetExpiresAt() != nil {
		t.Errorf("after ClearTTL: ttl %v expires %v, want neither", s.GetTtl(), s.GetExpiresAt())
	}
	s, err = client.UpdateSession(ctx, extended, agentd.UpdateSessionOptions{TTL: time.Hour})
	if err != nil {
		t.Fatalf("UpdateSession(TTL): %v", err)
	}
	if s.GetTtl().AsDuration() != time.Hour || s.GetExpiresAt().AsTime().Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("after TTL 1h: ttl %v expires %v", s.GetTtl().AsDuration(), s.GetExpiresAt().AsTime())
	}
	_, err = client.UpdateSession(ctx, extended, agentd.UpdateSessionOptions{TTL: time.Hour, ClearTTL: true})
	assertCode(t, err, connect.CodeInvalidArgument)

	time.Sleep(time.Until(start.Add(3 * time.Second)))
	_, err = client.GetSession(ctx, expiring)
	assertCode(t, err, connect.CodeNotFound)
	for _, id := range []string{cleared, extended} {
		if _, err := client.GetSession(ctx, id); err != nil {
			t.Errorf("GetSession(%s) 3 s later: %v", id, err)
		}
	}
	if got := listIDs(t, ctx, client, agentd.ListSessionsOptions{Labels: labels}); !sameSet(got, []string{cleared, extended}) {
		t.Errorf("listed 3 s later = %q, want %q", got, []string{cleared, extended})
	}
}

func TestAnotherTenantCannotListReadUpdateOrDeleteSessions(t *testing.T) {
	ctx := testContext(t)
	alice := agentd.NewClient(authURL(t), agentd.WithBearerToken(tokenAlice))
	bob := agentd.NewClient(authURL(t), agentd.WithBearerToken(tokenBob))
	suite := suiteLabel(t)
	labels := map[string]string{"suite": suite}
	id := newSession(t, ctx, alice, "assistant", agentd.ChatOptions{Labels: labels}).GetSessionId()

	if ids := listIDs(t, ctx, bob, agentd.ListSessionsOptions{Labels: labels}); len(ids) != 0 {
		t.Errorf("bob lists alice's sessions: %q", ids)
	}
	_, err := bob.GetSession(ctx, id)
	assertCode(t, err, connect.CodeNotFound)
	_, err = bob.UpdateSession(ctx, id, agentd.UpdateSessionOptions{SetLabels: map[string]string{"owner": "bob"}})
	assertCode(t, err, connect.CodeNotFound)
	if deleted, err := bob.DeleteSession(ctx, id); err != nil || deleted {
		t.Errorf("bob's DeleteSession of alice's session = %v, %v; want false", deleted, err)
	}

	s, err := alice.GetSession(ctx, id)
	if err != nil {
		t.Fatalf("alice's GetSession after bob's calls: %v", err)
	}
	if !mapsEqual(s.GetLabels(), labels) {
		t.Errorf("labels after bob's update = %v, want %v", s.GetLabels(), labels)
	}
	if ids := listIDs(t, ctx, alice, agentd.ListSessionsOptions{Labels: labels}); !slices.Equal(ids, []string{id}) {
		t.Errorf("alice lists %q, want [%s]", ids, id)
	}
}

func TestDeleteSessionDuringDetachedWorkAbortsItThenRemovesIt(t *testing.T) {
	ctx := testContext(t)
	client := newClient(t)
	// A turn of two minutes: a delete that waited for it instead of aborting it would outlast the
	// 20 s bound below by far, so no tight bound on how fast a loaded machine answers is needed to tell.
	out := detachSlowTurn(t, client, 120_000)

	statuses := make(chan agentdv1.SnapshotStatus, 8)
	watchDone := make(chan error, 1)
	go func() {
		defer close(statuses)
		for status, err := range client.WatchSnapshot(ctx, "assistant", out.GetSnapshotId()) {
			if err != nil {
				watchDone <- err
				return
			}
			statuses <- status
		}
		watchDone <- nil
	}()
	if first := <-statuses; first != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_PENDING {
		t.Fatalf("first watched status = %v, want PENDING", first)
	}

	start := time.Now()
	deleted, err := client.DeleteSession(ctx, out.GetSessionId())
	if err != nil || !deleted {
		t.Fatalf("DeleteSession during detached work = %v, %v; want true", deleted, err)
	}
	var last agentdv1.SnapshotStatus
	for status := range statuses {
		last = status
	}
	if err := <-watchDone; err != nil && connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("watch ended with %v, want ABORTED or NOT_FOUND", err)
	} else if err == nil && last != agentdv1.SnapshotStatus_SNAPSHOT_STATUS_ABORTED {
		t.Errorf("watch ended after %v, want ABORTED", last)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("delete and the end of the watch took %v: the two-minute turn was not aborted", elapsed)
	}
	_, err = client.GetSnapshot(ctx, "assistant", out.GetSnapshotId())
	assertCode(t, err, connect.CodeNotFound)
	_, err = client.GetSession(ctx, out.GetSessionId())
	assertCode(t, err, connect.CodeNotFound)
}
