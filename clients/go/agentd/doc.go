// Package agentd is the Go client of agentd, a server that runs stateful,
// multi-turn AI agents with snapshots. It wraps the generated connect-go
// client (github.com/agentd-dev/agentd/gen/go/agentd/v1/agentdv1connect).
//
// A conversation is a bidi Chat stream:
//
//	client := agentd.NewClient("http://127.0.0.1:8080")
//	conv, _ := client.Chat(ctx, "assistant", agentd.ChatOptions{})
//	turn, _ := conv.SendText(ctx, "hello")
//	for chunk, err := range turn.Chunks() {
//		if err != nil {
//			return err
//		}
//		fmt.Print(agentd.Text(chunk.GetModelChunk().GetContent()))
//	}
//	fmt.Println(turn.Index(), turn.SnapshotID(), turn.FinishReason())
//	out, err := conv.Output(ctx)
//
// # Sessions
//
// A new session can carry labels and an idle time-to-live (ChatOptions.Labels,
// ChatOptions.TTL); Client.ListSessions iterates over the caller's sessions
// (filtered by agent, labels and update time), Client.GetSession reads one,
// Client.UpdateSession changes its labels and time-to-live, and
// Client.DeleteSession removes it with every snapshot:
//
//	for s, err := range client.ListSessions(ctx, agentd.ListSessionsOptions{Labels: map[string]string{"user": "u-42"}}) {
//		if err != nil {
//			return err
//		}
//		deleted, err := client.DeleteSession(ctx, s.GetSessionId())
//	}
//
// Deleted and expired sessions are connect.CodeNotFound.
//
// # Detached work
//
// Conversation.Detach (or Run with AgentInput.Detach) hands the rest of an
// invocation to the server and returns a pending snapshot ID:
// Client.WatchSnapshot follows its status, Client.Abort stops it, and
// Client.Attach follows its stream (from any server sharing the store), each
// chunk carrying its Sequence; after a dropped connection, attach again after
// AttachedRun.LastSequence to receive the rest exactly once:
//
//	run := client.Attach(ctx, "assistant", pendingID, 0)
//	for chunk, err := range run.Chunks() {
//		if err != nil {
//			return err
//		}
//		fmt.Println(chunk.GetSequence(), agentd.Text(chunk.GetModelChunk().GetContent()))
//	}
//	out, err := run.Output()
//
// # Authentication and TLS
//
// For an agentd started with --auth-tokens (or JWT authentication), send a
// bearer token with every call; for one started with --tls-cert, use an
// "https://" base URL, and WithTLS for a private CA or a client certificate
// (mutual TLS, --tls-client-ca):
//
//	cfg, err := agentd.TLSConfigFromFiles("ca.pem", "client.pem", "client-key.pem")
//	if err != nil {
//		return err
//	}
//	client := agentd.NewClient("https://agentd.internal:8443",
//		agentd.WithTLS(cfg), agentd.WithBearerToken(token))
//
// WithTokenSource fetches the token per call instead. Calls without a valid
// token fail with connect.CodeUnauthenticated; another tenant's sessions and
// snapshots are connect.CodeNotFound.
//
// # Tracing
//
// WithInterceptors adds connect-go interceptors to every call. With
// otelconnect's (connectrpc.com/otelconnect) each call gets an OpenTelemetry
// client span under the span of its context and sends that span's W3C
// traceparent, so agentd's spans join the caller's trace; set the W3C
// propagator (otel.SetTextMapPropagator(propagation.TraceContext{}) or
// otelconnect.WithPropagator), as the otel default propagates nothing:
//
//	interceptor, err := otelconnect.NewInterceptor()
//	if err != nil {
//		return err
//	}
//	client := agentd.NewClient("http://127.0.0.1:8080", agentd.WithInterceptors(interceptor))
//
// # Retries
//
// A Client retries what may not have happened, by default: a call or stream
// that failed with connect.CodeUnavailable or a reset, refused or closed
// connection (not the caller's cancel or deadline), and a stream that ended
// before its TurnEnd or output. Every input carries a request ID
// (AgentInput.RequestId, a UUID v4 unless the caller set one) that the server
// deduplicates, so a retried turn runs once. A Conversation reconnects,
// resuming its session, and re-sends the inputs whose TurnEnd it has not
// seen; Attach and WatchSnapshot re-open. Retries go on for up to 30 s after
// the first failure (counted afresh after progress), with full-jitter backoff
// (100 ms to 2 s), within the context's deadline; see RetryPolicy,
// WithRetry, WithoutRetry and Client.Stats.
//
//	client := agentd.NewClient(url, agentd.WithRetry(agentd.RetryPolicy{
//		OnRetry: func(e agentd.RetryEvent) { log.Printf("retry %s: %v", e.Procedure, e.Err) },
//	}))
//
// # Keepalive
//
// A server that vanished without closing the connection (a crashed host, a
// dropped network path) sends nothing more. The client sends an HTTP/2 PING
// on a connection that received nothing for 30 s and closes the connection
// when the PING is not answered within 20 s: its calls fail with
// connect.CodeUnavailable, which the retry policy retries (a Conversation
// reopens on a new connection). WithKeepalive changes the two durations.
//
// # Errors
//
// Every RPC failure is a *connect.Error carrying a gRPC status code; read it
// with connect.CodeOf(err):
//
//   - connect.CodeNotFound: unknown agent, snapshot or session, or a
//     deleted or expired session.
//   - connect.CodeFailedPrecondition: the resume source does not match the
//     agent (State sent to a server-managed agent, IDs sent to a
//     client-managed one), resuming a snapshot that is not completed,
//     detaching where the store cannot run background work, or attaching
//     (Client.Attach) to a snapshot that is not detached work or whose chunks
//     are past the server's retention.
//   - connect.CodeInvalidArgument: malformed or conflicting input, e.g.
//     State together with SessionID or SnapshotID.
//   - connect.CodeAborted: the session is busy (ChatOptions.BusyPolicy
//     BusyReject, the server's default), or this invocation was stopped by
//     another call with BusyInterrupt.
//   - connect.CodeUnauthenticated, connect.CodePermissionDenied,
//     connect.CodeResourceExhausted: auth and limits.
//
// An in-band turn failure is not an RPC error: the turn ends with finish
// reason FINISH_REASON_FAILED and the output carries AgentOutput.Error (its
// Status is the canonical gRPC status name, e.g. "INTERNAL") and the last
// good snapshot or state.
package agentd
