// Command go-quickstart is a complete program that talks to agentd with the Go
// client: a two-turn conversation, resuming it by session, and background work
// that is detached, watched and read back. Start agentd first (npm start in the
// repository serves the example agents on 127.0.0.1:50051), then: go run .
//
// AGENTD_URL overrides the address (default http://127.0.0.1:50051).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentd-dev/agentd/clients/go/agentd"
)

func main() {
	url := os.Getenv("AGENTD_URL")
	if url == "" {
		url = "http://127.0.0.1:50051"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, agentd.NewClient(url)); err != nil {
		fmt.Fprintln(os.Stderr, "go-quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, client *agentd.Client) error {
	// A two-turn conversation: stream the first turn, wait for the second.
	conv, err := client.Chat(ctx, "assistant", agentd.ChatOptions{})
	if err != nil {
		return err
	}
	turn, err := conv.SendText(ctx, "hello")
	if err != nil {
		return err
	}
	for chunk, err := range turn.Chunks() { // ends after the TurnEnd chunk
		if err != nil {
			return err
		}
		fmt.Print(agentd.Text(chunk.GetModelChunk().GetContent()))
	}
	fmt.Println()
	second, err := conv.SendText(ctx, "and again")
	if err != nil {
		return err
	}
	end, err := second.Wait()
	if err != nil {
		return err
	}
	out, err := conv.Output(ctx) // half-close, drain, final output
	if err != nil {
		return err
	}
	fmt.Printf("turn %d of session %s\n", end.GetTurnIndex(), out.GetSessionId())

	// Resume by session, in a new conversation.
	resumed, err := client.Chat(ctx, "assistant", agentd.ChatOptions{SessionID: out.GetSessionId()})
	if err != nil {
		return err
	}
	third, err := resumed.SendText(ctx, "one more")
	if err != nil {
		return err
	}
	if _, err := third.Wait(); err != nil {
		return err
	}
	if _, err := resumed.Output(ctx); err != nil {
		return err
	}
	latest, err := client.GetLatestSnapshot(ctx, "assistant", out.GetSessionId())
	if err != nil {
		return err
	}
	fmt.Printf("resumed: the session has %d messages\n", len(latest.GetState().GetMessages()))

	// Background work: detach, watch it to the end, read its result.
	job, err := client.Chat(ctx, "assistant", agentd.ChatOptions{})
	if err != nil {
		return err
	}
	if _, err := job.SendText(ctx, "a long job"); err != nil {
		return err
	}
	detached, err := job.Detach(ctx) // FINISH_REASON_DETACHED and the pending snapshot's ID
	if err != nil {
		return err
	}
	for status, err := range client.WatchSnapshot(ctx, "assistant", detached.GetSnapshotId()) {
		if err != nil {
			return err
		}
		fmt.Println("background:", status) // SNAPSHOT_STATUS_PENDING … SNAPSHOT_STATUS_COMPLETED
	}
	done, err := client.GetSnapshot(ctx, "assistant", detached.GetSnapshotId())
	if err != nil {
		return err
	}
	fmt.Println("background result:", done.GetStatus(), done.GetFinishReason())
	return nil
}
