package agentd_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentd-dev/agentd/clients/go/agentd"
	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// recvTurn reads Chat responses until a TurnEnd and returns the turn's text
// and end.
func recvTurn(t *testing.T, stream grpc.BidiStreamingClient[agentdv1.ChatRequest, agentdv1.ChatResponse]) (string, *agentdv1.TurnEnd) {
	t.Helper()
	text := ""
	for {
		res, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		chunk := res.GetChunk()
		text += agentd.Text(chunk.GetModelChunk().GetContent())
		if end := chunk.GetTurnEnd(); end != nil {
			return text, end
		}
	}
}

func TestPlainGrpcGoStubsHoldATwoTurnChat(t *testing.T) {
	conn, err := grpc.NewClient(agentdAddr(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	stream, err := agentdv1.NewAgentServiceClient(conn).Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := stream.Send(&agentdv1.ChatRequest{Init: &agentdv1.AgentInit{Agent: "assistant"}, Input: agentd.TextInput("one")}); err != nil {
		t.Fatal(err)
	}
	text, end := recvTurn(t, stream)
	if text != "echo: one" || end.GetTurnIndex() != 0 || end.GetSnapshotId() == "" {
		t.Errorf("turn 0: text %q end %v", text, end)
	}
	if err := stream.Send(&agentdv1.ChatRequest{Input: agentd.TextInput("two")}); err != nil {
		t.Fatal(err)
	}
	text, end2 := recvTurn(t, stream)
	if text != "echo: two" || end2.GetTurnIndex() != 1 || end2.GetSnapshotId() == end.GetSnapshotId() {
		t.Errorf("turn 1: text %q end %v", text, end2)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv output: %v", err)
	}
	out := res.GetOutput()
	if out.GetSnapshotId() != end2.GetSnapshotId() || agentd.MessageText(out.GetMessage()) != "echo: two" {
		t.Errorf("output = %v", out)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the output: %v, want io.EOF", err)
	}
}
