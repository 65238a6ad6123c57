package agentd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// The chaos run: conversations x turns on one client.
const (
	chaosConversations = 8
	chaosTurns         = 25
	// chaosResetEvery is the mean number of bytes a proxied connection
	// carries before the proxy resets it.
	chaosResetEvery = 6 * 1024
)

// chaosResult is what one chaos run measured.
type chaosResult struct {
	sessions  []string         // each conversation's session ID
	inputs    [][]string       // each conversation's inputs, in order
	turnTimes []time.Duration  // every turn's time, Send to TurnEnd
	failures  []string         // every failed call, described
	retries   uint64           // client.Stats().Retries after the run
	hooked    int64            // OnRetry calls
	partial   atomic.Int64     // turns whose streamed text was cut by a reset
	ends      map[string]int32 // turn index of every input, by input text
	mu        sync.Mutex
}

// runChaos runs chaosConversations conversations of chaosTurns echo turns
// concurrently on one client of baseURL, each turn checked to stream its
// echo once and end with one TurnEnd.
func runChaos(t *testing.T, baseURL, label string) *chaosResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := &chaosResult{
		sessions: make([]string, chaosConversations),
		inputs:   make([][]string, chaosConversations),
		ends:     map[string]int32{},
	}
	var hooked atomic.Int64
	client := agentd.NewClient(baseURL, agentd.WithRetry(agentd.RetryPolicy{
		OnRetry: func(agentd.RetryEvent) { hooked.Add(1) },
	}))
	var wg sync.WaitGroup
	for c := range chaosConversations {
		wg.Go(func() { res.conversation(ctx, client, label, c) })
	}
	wg.Wait()
	res.retries, res.hooked = client.Stats().Retries, hooked.Load()
	return res
}

// conversation runs conversation c of a chaos run.
func (res *chaosResult) conversation(ctx context.Context, client *agentd.Client, label string, c int) {
	conv, err := client.Chat(ctx, "assistant", agentd.ChatOptions{})
	if err != nil {
		res.fail("conversation %d: Chat: %v", c, err)
		return
	}
	defer conv.Close()
	for i := range chaosTurns {
		text := fmt.Sprintf("%s c%d t%02d", label, c, i)
		start := time.Now()
		turn, err := conv.SendText(ctx, text)
		if err != nil {
			res.fail("%q: Send: %v", text, err)
			return
		}
		end, err := turn.Wait()
		if err != nil {
			res.fail("%q: turn: %v", text, err)
			return
		}
		elapsed := time.Since(start)
		res.mu.Lock()
		res.turnTimes = append(res.turnTimes, elapsed)
		res.inputs[c] = append(res.inputs[c], text)
		res.ends[text] = end.GetTurnIndex()
		res.mu.Unlock()
		// A turn the server committed before the reset is answered with
		// its TurnEnd alone: its text is what was delivered before.
		got, want := turn.Text(), "echo: "+text
		if !strings.HasPrefix(want, got) {
			res.fail("%q: streamed text %q, want a prefix of %q (each chunk at most once, in order)", text, got, want)
		}
		if got != want {
			res.partial.Add(1)
		}
	}
	if _, err := conv.Output(ctx); err != nil {
		res.fail("conversation %d: Output: %v", c, err)
	}
	res.mu.Lock()
	res.sessions[c] = conv.SessionID()
	res.mu.Unlock()
}

// fail records a failed call.
func (res *chaosResult) fail(format string, args ...any) {
	res.mu.Lock()
	defer res.mu.Unlock()
	res.failures = append(res.failures, fmt.Sprintf(format, args...))
}

// percentile returns the p-th percentile (0..100) of durations.
func percentile(durations []time.Duration, p int) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// userTexts returns the text of the user messages of state, in order.
func userTexts(state *agentdv1.SessionState) []string {
	var texts []string
	for _, m := range state.GetMessages() {
		if m.GetRole() == agentdv1.Role_ROLE_USER {
			texts = append(texts, agentd.MessageText(m))
		}
	}
	return texts
}

func TestChaosConversationsThroughResetsFailNoCallAndStoreEachInputOnce(t *testing.T) {
	addr := agentdAddr(t)
	proxy := startFaultProxy(t, addr, chaosResetEvery)

	warmup := runChaos(t, "http://"+addr, "warmup") // JIT and connections warm: not measured
	direct := runChaos(t, "http://"+addr, "direct")
	proxy.SetFaults(false)
	calm := runChaos(t, proxy.URL(), "calm")
	proxy.SetFaults(true)
	chaos := runChaos(t, proxy.URL(), "chaos")
	resets := proxy.Resets()

	t.Logf("no proxy: %d turns, p50 %v, p99 %v, retries %d",
		len(direct.turnTimes), percentile(direct.turnTimes, 50), percentile(direct.turnTimes, 99), direct.retries)
	t.Logf("proxy without resets: %d turns, p50 %v, p99 %v, retries %d",
		len(calm.turnTimes), percentile(calm.turnTimes, 50), percentile(calm.turnTimes, 99), calm.retries)
	t.Logf("with resets every ~%d B: %d turns, %d resets, %d retries (%d OnRetry calls), p50 %v, p99 %v; %d turns' text cut (committed before the reset, answered by TurnEnd alone)",
		chaosResetEvery, len(chaos.turnTimes), resets, chaos.retries, chaos.hooked,
		percentile(chaos.turnTimes, 50), percentile(chaos.turnTimes, 99), chaos.partial.Load())

	for _, f := range slices.Concat(warmup.failures, direct.failures, calm.failures, chaos.failures) {
		t.Errorf("failed call: %s", f)
	}
	if resets == 0 || chaos.retries == 0 {
		t.Fatalf("resets = %d, retries = %d: the chaos run was not disturbed", resets, chaos.retries)
	}
	if int64(chaos.retries) != chaos.hooked {
		t.Errorf("Stats().Retries = %d, OnRetry called %d times, want equal", chaos.retries, chaos.hooked)
	}
	// Every session's history, read directly (no proxy), holds each input
	// exactly once, in order, and each input's TurnEnd names its place.
	reader := newClient(t)
	ctx := testContext(t)
	for c, session := range chaos.sessions {
		if session == "" {
			continue // its failure is reported above
		}
		snap, err := reader.GetLatestSnapshot(ctx, "assistant", session)
		if err != nil {
			t.Errorf("conversation %d: GetLatestSnapshot(%s): %v", c, session, err)
			continue
		}
		if got, want := userTexts(snap.GetState()), chaos.inputs[c]; !slices.Equal(got, want) {
			t.Errorf("conversation %d (session %s): stored inputs\n%q\nwant each input once, in order:\n%q", c, session, got, want)
		}
		for i, text := range chaos.inputs[c] {
			if got := chaos.ends[text]; got != int32(i) {
				t.Errorf("%q: TurnEnd turn index %d, want %d (one turn per input)", text, got, i)
				break
			}
		}
	}
}
