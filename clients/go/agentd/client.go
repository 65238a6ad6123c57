package agentd

import (
	"context"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
	"github.com/agentd-dev/agentd/gen/go/agentd/v1/agentdv1connect"
)

// Client talks to one agentd server. It is safe for concurrent use; each Chat
// opens its own stream.
type Client struct {
	rpc   agentdv1connect.AgentServiceClient
	retry *retrier
}

// NewClient returns a client for the agentd server at baseURL (for example
// "http://127.0.0.1:8080", or "https://agentd.internal:8443" for a server
// started with --tls-cert). By default it speaks the gRPC protocol over
// cleartext HTTP/2 (h2c) for "http://" and HTTP/2 over TLS for "https://",
// so every RPC, bidi Chat included, works; see WithConnectProtocol,
// WithGRPCWeb and WithHTTPClient, and WithBearerToken, WithTokenSource and
// WithTLS for authentication and TLS settings, and WithKeepalive for the
// HTTP/2 PINGs that detect a server that vanished. It does not connect until
// the first call.
//
// The client retries what may not have happened (see RetryPolicy): on by
// default, set with WithRetry, off with WithoutRetry. Every input it sends
// carries a request ID, so a retried turn runs at most once.
func NewClient(baseURL string, opts ...Option) *Client {
	cfg := clientConfig{protocol: connect.WithGRPC()}
	for _, opt := range opts {
		opt(&cfg)
	}
	var copts []connect.ClientOption
	if cfg.protocol != nil {
		copts = append(copts, cfg.protocol)
	}
	if cfg.token != nil {
		copts = append(copts, connect.WithInterceptors(tokenInterceptor{cfg.token}))
	}
	copts = append(copts, cfg.extra...)
	copts = append(copts, connect.WithInterceptors(lostConnectionInterceptor{}))
	return &Client{
		rpc:   agentdv1connect.NewAgentServiceClient(cfg.httpClientFor(baseURL), baseURL, copts...),
		retry: newRetrier(cfg.retry),
	}
}

// httpClientFor returns the HTTP client of a Client of baseURL: the one of
// WithHTTPClient, else the default transport with the TLS and keepalive
// settings, or, when the options conflict, one that fails every call with
// connect.CodeInvalidArgument.
func (cfg *clientConfig) httpClientFor(baseURL string) connect.HTTPClient {
	ka := defaultKeepalive
	if cfg.keepalive != nil {
		ka = *cfg.keepalive
	}
	kaErr := ka.validate()
	switch {
	case cfg.keepalive != nil && cfg.httpClient != nil:
		return misconfiguredClient{connect.NewError(connect.CodeInvalidArgument,
			errors.New("agentd: WithKeepalive cannot be combined with WithHTTPClient; set HTTP2.SendPingTimeout and PingTimeout on that client's transport"))}
	case kaErr != nil:
		return misconfiguredClient{connect.NewError(connect.CodeInvalidArgument, kaErr)}
	case cfg.tls != nil && cfg.httpClient != nil:
		return misconfiguredClient{connect.NewError(connect.CodeInvalidArgument,
			errors.New("agentd: WithTLS cannot be combined with WithHTTPClient; configure TLS on that client's transport"))}
	case cfg.tls != nil && !strings.HasPrefix(strings.ToLower(baseURL), "https://"):
		return misconfiguredClient{connect.NewError(connect.CodeInvalidArgument,
			errors.New("agentd: WithTLS needs an https:// base URL"))}
	case cfg.httpClient == nil:
		return newHTTP2Client(cfg.tls, ka)
	}
	return cfg.httpClient
}

// Service returns the generated connect-go client underneath, for calls the
// helpers do not cover. Its calls are not retried and get no request ID.
func (c *Client) Service() agentdv1connect.AgentServiceClient { return c.rpc }

// Stats returns what the client did so far: the retries made by all its
// calls and conversations.
func (c *Client) Stats() Stats { return Stats{Retries: c.retry.retries.Load()} }

// ChatOptions chooses the conversation a Chat, Run or RunText continues. The
// sources compete: for a server-managed agent set SessionID (resume the
// session's latest snapshot), SnapshotID (branch from that snapshot) or both
// (the session is asserted); for a client-managed agent set State (for
// example AgentOutput.State of the previous invocation). Leave all empty to
// start a fresh session. A mismatch fails with connect.CodeFailedPrecondition,
// State together with an ID with connect.CodeInvalidArgument.
//
// BusyPolicy chooses what the invocation does when the session is busy
// (another Chat, Run or detached work holds it): BusyReject, BusyEnqueue or
// BusyInterrupt; the zero value leaves the choice to the server's default
// (REJECT unless the server sets --busy-policy).
//
// Labels and TTL apply to a NEW session only (neither SessionID nor
// SnapshotID set): Labels are stored with it (find it again with
// Client.ListSessions; change them with Client.UpdateSession), and TTL is its
// idle time-to-live, after which the server deletes it (zero: the server's
// --session-ttl, none by default). Change either later with
// Client.UpdateSession.
type ChatOptions struct {
	SessionID  string
	SnapshotID string
	State      *agentdv1.SessionState
	BusyPolicy agentdv1.BusyPolicy
	Labels     map[string]string
	TTL        time.Duration
	// StatePatch forks from an edited past: RFC 6902 operations on the custom
	// state of the resumed snapshot (SessionID or SnapshotID), applied before
	// the first turn runs (build them with PatchOp). The patched state must
	// pass the agent's state schema, else connect.CodeInvalidArgument naming
	// the path; the first new snapshot is a child of the resumed one and notes
	// the edit (Snapshot.Edit).
	StatePatch []*agentdv1.JsonPatchOperation
	// MessagesPatch is like StatePatch, on the resumed history in its JSON form
	// (the messages as GetSnapshot shows them in proto JSON).
	MessagesPatch []*agentdv1.JsonPatchOperation
}

// The busy policies of ChatOptions.BusyPolicy. A session is busy while
// another invocation runs on it: an open Chat, a Run in progress, or detached
// work that has not finished.
const (
	// BusyDefault leaves the choice to the server (REJECT unless the server
	// sets --busy-policy).
	BusyDefault = agentdv1.BusyPolicy_BUSY_POLICY_UNSPECIFIED
	// BusyReject fails the call at once with connect.CodeAborted; the error
	// message names the running invocation.
	BusyReject = agentdv1.BusyPolicy_BUSY_POLICY_REJECT
	// BusyEnqueue waits until the session is free (first come, first
	// served), bounded by the call's context deadline
	// (connect.CodeDeadlineExceeded). The call then continues from the
	// session's head at that moment.
	BusyEnqueue = agentdv1.BusyPolicy_BUSY_POLICY_ENQUEUE
	// BusyInterrupt stops the running invocation (it ends with
	// connect.CodeAborted; its unfinished turn is not written), then runs.
	// Detached work is not interrupted: Abort it (Client.Abort) first.
	BusyInterrupt = agentdv1.BusyPolicy_BUSY_POLICY_INTERRUPT
)

// init builds the wire AgentInit for agent.
func (o ChatOptions) init(agent string) *agentdv1.AgentInit {
	init := &agentdv1.AgentInit{Agent: agent, SessionId: o.SessionID, SnapshotId: o.SnapshotID, State: o.State, BusyPolicy: o.BusyPolicy, Labels: o.Labels,
		StatePatch: o.StatePatch, MessagesPatch: o.MessagesPatch}
	if o.TTL != 0 {
		init.Ttl = durationpb.New(o.TTL)
	}
	return init
}

// ListAgents describes every agent the server serves.
func (c *Client) ListAgents(ctx context.Context) ([]*agentdv1.AgentInfo, error) {
	res, err := retryCall(ctx, c.retry, "ListAgents", func(ctx context.Context) (*connect.Response[agentdv1.ListAgentsResponse], error) {
		return c.rpc.ListAgents(ctx, connect.NewRequest(&agentdv1.ListAgentsRequest{}))
	})
	if err != nil {
		return nil, err
	}
	return res.Msg.GetAgents(), nil
}

// Run runs one turn of agent on input, continuing the conversation chosen by
// opts, and returns its output. An in-band turn failure is not an error: it
// returns an output with FinishReason FINISH_REASON_FAILED and Error set.
//
// The input carries a request ID (input.RequestId, or a new one on a copy),
// and a failed attempt that may be retried (see RetryPolicy) is sent again
// with it: the server runs the turn at most once and answers a retry of a
// committed turn with the same output, on the same session.
func (c *Client) Run(ctx context.Context, agent string, opts ChatOptions, input *agentdv1.AgentInput) (*agentdv1.AgentOutput, error) {
	req := &agentdv1.RunRequest{Init: opts.init(agent), Input: withRequestID(input)}
	res, err := retryCall(ctx, c.retry, "Run", func(ctx context.Context) (*connect.Response[agentdv1.RunResponse], error) {
		return c.rpc.Run(ctx, connect.NewRequest(req))
	})
	if err != nil {
		return nil, err
	}
	return res.Msg.GetOutput(), nil
}

// RunText is Run with a user message made of text.
func (c *Client) RunText(ctx context.Context, agent string, opts ChatOptions, text string) (*agentdv1.AgentOutput, error) {
	return c.Run(ctx, agent, opts, TextInput(text))
}
