package agentd_test

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// Issue 47: a turn that fails in-band (here the 1 KiB session cap) while the
// client's request side is still open is reported as that failure, every
// time and over every protocol: never a transport error, never a reconnect
// that reports the session as if nothing had failed.
func TestATurnFailingInBandWithTheRequestSideOpenIsSeenAsThatFailure(t *testing.T) {
	addr := namedServerAddr(t, "session-cap-1k", func() ([]string, error) {
		return []string{"--max-session-bytes", "1024"}, nil
	})
	protocols := map[string]agentd.Option{
		"grpc":     agentd.WithGRPC(),
		"connect":  agentd.WithConnectProtocol(),
		"grpc-web": agentd.WithGRPCWeb(),
	}
	tooBig := strings.Repeat("x", 4000)
	for name, protocol := range protocols {
		t.Run(name, func(t *testing.T) {
			client := agentd.NewClient("http://"+addr, protocol)
			for run := 0; run < 20; run++ {
				ctx := testContext(t)
				conv := openChat(t, ctx, client, "assistant", agentd.ChatOptions{})
				runTurn(t, ctx, conv, "hello")
				turn, err := conv.SendText(ctx, tooBig)
				if err != nil {
					t.Fatalf("run %d: SendText: %v", run, err)
				}
				end, err := turn.Wait()
				if err != nil {
					t.Fatalf("run %d: the failing turn: %v", run, err)
				}
				if end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED {
					t.Fatalf("run %d: TurnEnd finish reason %v, want FAILED", run, end.GetFinishReason())
				}
				// The request side is still open here; Output half-closes it only now.
				out, err := conv.Output(ctx)
				if err != nil {
					t.Fatalf("run %d: Output: %v", run, err)
				}
				if out.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_FAILED || out.GetError().GetStatus() != "RESOURCE_EXHAUSTED" {
					t.Fatalf("run %d: output %v / %v, want FAILED with RESOURCE_EXHAUSTED", run, out.GetFinishReason(), out.GetError())
				}
			}
		})
	}
}
