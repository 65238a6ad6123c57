// Command restart-driver is the Go client's side of issue 47's crash test
// (test/harness/restart-workload.ts runs it): CONVERSATIONS concurrent
// conversations of TURNS turns with the assistant echo agent on AGENTD_URL,
// with the client's default retry policy. A failed turn is recorded and the
// conversation goes on in a new Chat resuming its session. It prints one JSON
// object: per conversation its sessions and turns (a failed one with its code
// and message), and the client's retries.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

type turnResult struct {
	Text    string `json:"text"`
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	EndMs   int64  `json:"endMs"`
}

type conversationResult struct {
	Sessions []string     `json:"sessions"`
	Turns    []turnResult `json:"turns"`
}

type result struct {
	Conversations []conversationResult `json:"conversations"`
	Retries       uint64               `json:"retries"`
}

func main() {
	url := os.Getenv("AGENTD_URL")
	conversations, _ := strconv.Atoi(os.Getenv("CONVERSATIONS"))
	turns, _ := strconv.Atoi(os.Getenv("TURNS"))
	tag := os.Getenv("TAG")
	client := agentd.NewClient(url)
	out := result{Conversations: make([]conversationResult, conversations)}
	var wg sync.WaitGroup
	for c := range conversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out.Conversations[c] = converse(client, c, turns, tag)
		}()
	}
	wg.Wait()
	out.Retries = client.Stats().Retries
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func converse(client *agentd.Client, c, turns int, tag string) conversationResult {
	ctx := context.Background()
	res := conversationResult{Sessions: []string{}, Turns: []turnResult{}}
	var conv *agentd.Conversation
	note := func() {
		if conv == nil {
			return
		}
		if id := conv.SessionID(); id != "" && (len(res.Sessions) == 0 || res.Sessions[len(res.Sessions)-1] != id) {
			res.Sessions = append(res.Sessions, id)
		}
	}
	fail := func(text, code, message string) {
		res.Turns = append(res.Turns, turnResult{Text: text, Code: code, Message: message, EndMs: time.Now().UnixMilli()})
		note()
		if conv != nil {
			_ = conv.Close()
		}
		conv = nil
	}
	for t := range turns {
		text := fmt.Sprintf("%s conversation %d turn %d", tag, c, t)
		if conv == nil {
			opts := agentd.ChatOptions{}
			if n := len(res.Sessions); n > 0 {
				opts.SessionID = res.Sessions[n-1]
			}
			var err error
			if conv, err = client.Chat(ctx, "assistant", opts); err != nil {
				fail(text, codeName(err), errMessage(err))
				continue
			}
		}
		turn, err := conv.SendText(ctx, text)
		if err != nil {
			fail(text, codeName(err), errMessage(err))
			continue
		}
		end, err := turn.Wait()
		if err != nil {
			fail(text, codeName(err), errMessage(err))
			continue
		}
		if end.GetFinishReason() != agentdv1.FinishReason_FINISH_REASON_STOP {
			reason := strings.TrimPrefix(end.GetFinishReason().String(), "FINISH_REASON_")
			fail(text, reason, "turn ended "+strings.ToLower(reason))
			continue
		}
		res.Turns = append(res.Turns, turnResult{Text: text, OK: true, EndMs: time.Now().UnixMilli()})
		note()
	}
	if conv != nil {
		_, _ = conv.Output(ctx)
		note()
	}
	return res
}

// codeName is err's gRPC code as the TypeScript driver names it ("UNAVAILABLE").
func codeName(err error) string {
	return strings.ToUpper(connect.CodeOf(err).String())
}

// errMessage is err's message without the code prefix (a connect error's Message()).
func errMessage(err error) string {
	var connectErr *connect.Error
	if errors.As(err, &connectErr) {
		return connectErr.Message()
	}
	return err.Error()
}
