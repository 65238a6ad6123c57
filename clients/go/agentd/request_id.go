package agentd

import (
	"crypto/rand"
	"encoding/hex"

	"google.golang.org/protobuf/proto"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// NewRequestID returns a random UUID v4 in canonical lowercase form, the
// request ID the client gives every input (AgentInput.RequestId) and
// DeleteSession call the caller did not give one. Set your own on an input
// (at most 64 characters of [A-Za-z0-9_-]) to make a resend of yours
// deduplicated too: the server answers a committed request ID with the turn
// it committed instead of running the input again.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// withRequestID returns input carrying a request ID: input itself when it has
// one, else a copy with a new one (the caller's message is not changed). A
// nil input stays nil.
func withRequestID(input *agentdv1.AgentInput) *agentdv1.AgentInput {
	if input == nil || input.GetRequestId() != "" {
		return input
	}
	c := proto.CloneOf(input)
	c.RequestId = NewRequestID()
	return c
}
