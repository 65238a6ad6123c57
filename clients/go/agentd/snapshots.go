package agentd

import (
	"context"
	"iter"

	"connectrpc.com/connect"

	agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"
)

// GetSnapshot reads snapshot snapshotID of agent, with the agent's state
// transform applied. Unknown IDs fail with connect.CodeNotFound.
func (c *Client) GetSnapshot(ctx context.Context, agent, snapshotID string) (*agentdv1.Snapshot, error) {
	return c.getSnapshot(ctx, &agentdv1.GetSnapshotRequest{Agent: agent, SnapshotId: snapshotID})
}

// GetLatestSnapshot reads the latest snapshot of session sessionID of agent,
// with the agent's state transform applied. Unknown sessions fail with
// connect.CodeNotFound.
func (c *Client) GetLatestSnapshot(ctx context.Context, agent, sessionID string) (*agentdv1.Snapshot, error) {
	return c.getSnapshot(ctx, &agentdv1.GetSnapshotRequest{Agent: agent, SessionId: sessionID})
}

func (c *Client) getSnapshot(ctx context.Context, req *agentdv1.GetSnapshotRequest) (*agentdv1.Snapshot, error) {
	res, err := retryCall(ctx, c.retry, "GetSnapshot", func(ctx context.Context) (*connect.Response[agentdv1.GetSnapshotResponse], error) {
		return c.rpc.GetSnapshot(ctx, connect.NewRequest(req))
	})
	if err != nil {
		return nil, err
	}
	return res.Msg.GetSnapshot(), nil
}

// ListOptions pages through ListSnapshots.
type ListOptions struct {
	// PageSize is the most snapshots per page (server default 50, max 1000).
	PageSize int32
	// PageToken continues from a previous page's next token.
	PageToken string
	// IncludeState includes each snapshot's (transformed) state.
	IncludeState bool
}

// ListSnapshots returns one page of session sessionID's snapshots, newest
// first, and the token of the next page ("" on the last page).
func (c *Client) ListSnapshots(ctx context.Context, agent, sessionID string, opts ListOptions) ([]*agentdv1.Snapshot, string, error) {
	req := &agentdv1.ListSnapshotsRequest{
		Agent: agent, SessionId: sessionID,
		PageSize: opts.PageSize, PageToken: opts.PageToken, IncludeState: opts.IncludeState,
	}
	res, err := retryCall(ctx, c.retry, "ListSnapshots", func(ctx context.Context) (*connect.Response[agentdv1.ListSnapshotsResponse], error) {
		return c.rpc.ListSnapshots(ctx, connect.NewRequest(req))
	})
	if err != nil {
		return nil, "", err
	}
	return res.Msg.GetSnapshots(), res.Msg.GetNextPageToken(), nil
}

// AllSnapshots iterates over every snapshot of session sessionID, newest
// first, fetching pages of opts.PageSize as needed (opts.PageToken is the
// starting point). An error ends the iteration after being yielded.
func (c *Client) AllSnapshots(ctx context.Context, agent, sessionID string, opts ListOptions) iter.Seq2[*agentdv1.Snapshot, error] {
	return func(yield func(*agentdv1.Snapshot, error) bool) {
		for {
			page, next, err := c.ListSnapshots(ctx, agent, sessionID, opts)
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

// WatchSnapshot iterates over the status of snapshot snapshotID: the current
// status at once, then every change, ending after a terminal status
// (completed, failed, aborted, expired). Stopping the loop early cancels the
// watch. A stream error is yielded last. A watch whose stream fails in a way
// that may be retried (see RetryPolicy) is re-opened; the status it starts
// with is yielded only if it differs from the last one yielded.
func (c *Client) WatchSnapshot(ctx context.Context, agent, snapshotID string) iter.Seq2[agentdv1.SnapshotStatus, error] {
	return func(yield func(agentdv1.SnapshotStatus, error) bool) {
		last := agentdv1.SnapshotStatus_SNAPSHOT_STATUS_UNSPECIFIED
		var streak retryStreak
		for {
			more, err := c.watchOnce(ctx, agent, snapshotID, &last, yield)
			if !more {
				return
			}
			if err == nil {
				err = connect.NewError(connect.CodeUnavailable, errStreamEnded)
			}
			if !c.retry.wait(ctx, "WatchSnapshot", &streak, err) {
				yield(agentdv1.SnapshotStatus_SNAPSHOT_STATUS_UNSPECIFIED, err)
				return
			}
		}
	}
}

// watchOnce opens one WatchSnapshot stream and yields its statuses (not
// repeating *last). more is false when the iteration is over (a terminal
// status, or the caller stopped); otherwise err is why the stream ended (nil:
// it ended before a terminal status).
func (c *Client) watchOnce(ctx context.Context, agent, snapshotID string, last *agentdv1.SnapshotStatus, yield func(agentdv1.SnapshotStatus, error) bool) (more bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.WatchSnapshot(ctx, connect.NewRequest(&agentdv1.WatchSnapshotRequest{Agent: agent, SnapshotId: snapshotID}))
	if err != nil {
		return true, err
	}
	defer stream.Close()
	for stream.Receive() {
		status := stream.Msg().GetStatus()
		if status != *last {
			*last = status
			if !yield(status, nil) {
				return false, nil
			}
		}
		if IsTerminal(status) {
			return false, nil
		}
	}
	return true, stream.Err()
}

// IsTerminal reports whether status is final: completed, failed, aborted or
// expired.
func IsTerminal(status agentdv1.SnapshotStatus) bool {
	switch status {
	case agentdv1.SnapshotStatus_SNAPSHOT_STATUS_COMPLETED,
		agentdv1.SnapshotStatus_SNAPSHOT_STATUS_FAILED,
		agentdv1.SnapshotStatus_SNAPSHOT_STATUS_ABORTED,
		agentdv1.SnapshotStatus_SNAPSHOT_STATUS_EXPIRED:
		return true
	}
	return false
}

// Abort flips pending snapshot snapshotID to aborted, which cancels its
// background work, and returns the resulting status: ABORTED on success, the
// existing status of an already terminal snapshot otherwise.
func (c *Client) Abort(ctx context.Context, agent, snapshotID string) (agentdv1.SnapshotStatus, error) {
	res, err := retryCall(ctx, c.retry, "Abort", func(ctx context.Context) (*connect.Response[agentdv1.AbortResponse], error) {
		return c.rpc.Abort(ctx, connect.NewRequest(&agentdv1.AbortRequest{Agent: agent, SnapshotId: snapshotID}))
	})
	if err != nil {
		return agentdv1.SnapshotStatus_SNAPSHOT_STATUS_UNSPECIFIED, err
	}
	return res.Msg.GetStatus(), nil
}
