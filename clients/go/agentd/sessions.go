package agentd

import (
	"context"
	"iter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// ListSessionsOptions filters and pages ListSessions. The zero value lists
// every session of the caller (its tenant, with authentication).
type ListSessionsOptions struct {
	// Agent keeps only this agent's sessions ("": every agent's).
	Agent string
	// Labels keeps only sessions carrying each of these labels with exactly
	// this value.
	Labels map[string]string
	// UpdatedAfter keeps only sessions updated after this time (zero: no
	// bound).
	UpdatedAfter time.Time
	// PageSize is the most sessions per page (server default 50, max 1000).
	PageSize int32
	// PageToken continues from a previous page's next token.
	PageToken string
}

// request builds the wire ListSessionsRequest of opts.
func (o ListSessionsOptions) request() *agentdv1.ListSessionsRequest {
	req := &agentdv1.ListSessionsRequest{Agent: o.Agent, Labels: o.Labels, PageSize: o.PageSize, PageToken: o.PageToken}
	if !o.UpdatedAfter.IsZero() {
		req.UpdatedAfter = timestamppb.New(o.UpdatedAfter)
	}
	return req
}

// ListSessionsPage returns one page of the caller's sessions, newest-updated
// first, filtered by opts, and the token of the next page ("" on the last
// page). Each session is its head: ID, agent, labels, turn count, head
// snapshot and status, created/updated times, expiry.
func (c *Client) ListSessionsPage(ctx context.Context, opts ListSessionsOptions) ([]*agentdv1.Session, string, error) {
	res, err := retryCall(ctx, c.retry, "ListSessions", func(ctx context.Context) (*connect.Response[agentdv1.ListSessionsResponse], error) {
		return c.rpc.ListSessions(ctx, connect.NewRequest(opts.request()))
	})
	if err != nil {
		return nil, "", err
	}
	return res.Msg.GetSessions(), res.Msg.GetNextPageToken(), nil
}

// ListSessions iterates over every session of the caller matching opts,
// newest-updated first, fetching pages of opts.PageSize as needed
// (opts.PageToken is the starting point). Each session is listed once even
// while others are created concurrently. An error ends the iteration after
// being yielded.
//
//	for s, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{Labels: map[string]string{"user": "u-42"}}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(s.GetSessionId(), s.GetTurnCount(), s.GetUpdatedAt().AsTime())
//	}
func (c *Client) ListSessions(ctx context.Context, opts ListSessionsOptions) iter.Seq2[*agentdv1.Session, error] {
	return func(yield func(*agentdv1.Session, error) bool) {
		for {
			page, next, err := c.ListSessionsPage(ctx, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range page {
				if !yield(s, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			opts.PageToken = next
		}
	}
}

// GetSession reads the head of session sessionID. Unknown, deleted, expired
// and other tenants' sessions fail with connect.CodeNotFound.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*agentdv1.Session, error) {
	res, err := retryCall(ctx, c.retry, "GetSession", func(ctx context.Context) (*connect.Response[agentdv1.GetSessionResponse], error) {
		return c.rpc.GetSession(ctx, connect.NewRequest(&agentdv1.GetSessionRequest{SessionId: sessionID}))
	})
	if err != nil {
		return nil, err
	}
	return res.Msg.GetSession(), nil
}

// UpdateSessionOptions is what UpdateSession changes; the zero value changes
// nothing.
type UpdateSessionOptions struct {
	// SetLabels adds or overwrites these labels.
	SetLabels map[string]string
	// RemoveLabels removes these label keys (after SetLabels is applied).
	RemoveLabels []string
	// TTL sets a new idle time-to-live, counted from now (zero: unchanged).
	TTL time.Duration
	// ClearTTL removes the time-to-live: the session no longer expires.
	// Setting it together with TTL fails with connect.CodeInvalidArgument.
	ClearTTL bool
}

// UpdateSession changes the labels or the time-to-live of session sessionID
// and returns its updated head. Unknown sessions fail with
// connect.CodeNotFound; too many or too large labels with
// connect.CodeInvalidArgument.
func (c *Client) UpdateSession(ctx context.Context, sessionID string, opts UpdateSessionOptions) (*agentdv1.Session, error) {
	req := &agentdv1.UpdateSessionRequest{
		SessionId: sessionID, SetLabels: opts.SetLabels, RemoveLabels: opts.RemoveLabels, ClearTtl: opts.ClearTTL,
	}
	if opts.TTL != 0 {
		req.Ttl = durationpb.New(opts.TTL)
	}
	res, err := retryCall(ctx, c.retry, "UpdateSession", func(ctx context.Context) (*connect.Response[agentdv1.UpdateSessionResponse], error) {
		return c.rpc.UpdateSession(ctx, connect.NewRequest(req))
	})
	if err != nil {
		return nil, err
	}
	return res.Msg.GetSession(), nil
}

// DeleteSession aborts the running and pending work of session sessionID,
// then removes it and every snapshot of it; afterwards every call naming the
// session or one of its snapshots fails with connect.CodeNotFound. It is
// idempotent: deleted is false when there was nothing to delete (already
// deleted, expired, never existed, or another tenant's). The call carries a
// new request ID, so a retry answers as the first attempt did.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) (deleted bool, err error) {
	req := &agentdv1.DeleteSessionRequest{SessionId: sessionID, RequestId: NewRequestID()}
	res, err := retryCall(ctx, c.retry, "DeleteSession", func(ctx context.Context) (*connect.Response[agentdv1.DeleteSessionResponse], error) {
		return c.rpc.DeleteSession(ctx, connect.NewRequest(req))
	})
	if err != nil {
		return false, err
	}
	return res.Msg.GetDeleted(), nil
}
