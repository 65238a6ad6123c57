package agentd_test

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// sizeCapURL is an agentd whose sessions hold at most 1 KiB, so a turn with a
// larger input fails in-band (RESOURCE_EXHAUSTED, --max-session-bytes).
func sizeCapURL(t *testing.T) string {
	t.Helper()
	return "http://" + namedServerAddr(t, "session-size-cap", func() ([]string, error) {
		return []string{"--max-session-bytes", "1024"}, nil
	})
}

// A turn that fails in-band while the request side is still open (no Output
// yet) is reported as that failure: a FAILED TurnEnd and a FAILED output with
// RESOURCE_EXHAUSTED, never as a stop, and never retried as a broken
// connection, even though agentd may reset the stream right after its
// trailers (issue 47). 20 runs per protocol.
func TestInBandFailureWithTheRequestSideOpenIsReportedAsTheFailure(t *testing.T) {
	url := sizeCapURL(t)
	big := strings.Repeat("x", 2048)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			client := agentd.NewClient(url, p.opt)
			for run := range 20 {
				ctx := testContext(t)
				conv, err := client.Chat(ctx, "assistant", agentd.ChatOptions{})
				if err != nil {
					t.Fatalf("run %d: Chat: %v", run, err)
				}
				first, err := conv.SendText(ctx, "fits")
				if err != nil {
					t.Fatalf("run %d: send: %v", run, err)
				}
				if end, err := first.Wait(); err != nil || end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
					t.Fatalf("run %d: first turn = %v, %v; want STOP", run, end, err)
				}
				turn, err := conv.SendText(ctx, big)
				if err != nil {
					t.Fatalf("run %d: send: %v", run, err)
				}
				end, err := turn.Wait()
				if err != nil || end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED {
					t.Fatalf("run %d: the capped turn = %v, %v; want a FAILED TurnEnd", run, end, err)
				}
				out, err := conv.Output(ctx)
				if err != nil {
					t.Fatalf("run %d: Output: %v; want the failed output", run, err)
				}
				if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED || out.GetError().GetStatus() != "RESOURCE_EXHAUSTED" {
					t.Fatalf("run %d: output = %v %v; want FAILED with RESOURCE_EXHAUSTED", run, out.GetFinishReason(), out.GetError())
				}
				if !strings.Contains(out.GetError().GetMessage(), "max-session-bytes") {
					t.Errorf("run %d: error message %q does not name --max-session-bytes", run, out.GetError().GetMessage())
				}
			}
			if n := client.Stats().Retries; n != 0 {
				t.Errorf("%d retries: an in-band failure must not be retried as a broken connection", n)
			}
		})
	}
}
