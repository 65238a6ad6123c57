import { DEFAULT_SESSION_SETTINGS } from "../runtime/sessions/session-settings.js";
import { DEFAULT_INPUT_LIMITS } from "../runtime/sessions/input-limits.js";
import { DEFAULT_CONNECTION_LIMITS } from "../server/connection-limits.js";
import { DEFAULT_GRACE_MS, DEFAULT_MAX_MESSAGE_BYTES } from "../server/server.js";
import { FAIR_SHARE_USAGE } from "./fair-share-args.js";
import { WEBHOOK_USAGE } from "./webhook-args.js";
import { MCP_USAGE } from "./mcp-args.js";
import { DEFAULT_PORT } from "./serve-config.js";

/** Usage text printed by `agentd --help`. */
export const USAGE = `Usage: agentd serve [agents-module ...] [options]
       agentd init [directory]            (create a project that serves and tests one agent; see agentd init --help)
       agentd upgrade-store <store>       (migrate an SQL store's schema; see agentd upgrade-store --help)
       agentd copy-store <from> <to>      (copy every session between two stores; see agentd copy-store --help)

Serves agentd.v1.AgentService (gRPC, gRPC-Web and Connect on one port), with
grpc.health.v1.Health and server reflection. Each agents module adds the Agent
instances it exports (default export, an exported array, or named exports; .ts
works). The example agents "assistant" and "tasks" are served when no agents
module and no --prompts directory is given (or with --examples).
Through npm, flags go after "--": npm start -- --port 8080

Options:
  --host <host>               interface to bind (default 127.0.0.1)
  --port <port>               TCP port, 0 = any free port (default $PORT or ${DEFAULT_PORT})
  --store <uri>               sqlite:<file> | postgres://host/db | memory: | mongodb://host/db
                              (default sqlite:./.agentd/agentd.db; file:<dir> is retired:
                              move it with agentd copy-store)
  --prompts <dir>             directory of .prompt files for prompt agents
  --examples, --no-examples   serve the example agents "assistant" and "tasks" (default: only
                              when no agents module and no --prompts is given)
  --echo-delay-ms <n>         delay between chunks of the offline echo model (default 0)
  --max-message-bytes <n>     largest accepted request message (default ${DEFAULT_MAX_MESSAGE_BYTES})
  --log-level <level>         fatal|error|warn|info|debug|trace|silent (default info)
  --cors-origin <origin>      let browsers on this origin call cross-origin (repeatable; * = any)
  --inspector                 serve the inspector, a browser UI of sessions, snapshots and live
                              work, at http://<host>:<port>/inspector/ (asks for a token with auth)
  --drain-ms <n>              on SIGTERM/SIGINT, how long in-flight work may finish (default ${DEFAULT_GRACE_MS});
                              5 s later the process exits 1 whatever still runs
  --heartbeat-interval-ms <n> how often detached work refreshes its pending snapshot (default 5000)
  --heartbeat-ttl-ms <n>      a pending snapshot silent this long is presumed dead: another instance
                              takes its work over within one more TTL, after which it reads
                              expired (default 30000)
  --instance-id <name>        this instance's name in the detached work it runs and the leases
                              it holds; one name per live instance: a restart under the same
                              name frees its predecessor's leases at once (default <hostname>:<pid>)
  --no-takeover               never take over the detached work of dead instances (this
                              instance still serves, watches and aborts it)
  --chunk-retention <duration>
                              keep the streamed chunks of detached work this long after it ends,
                              for AttachInvocation, e.g. 15m, 2h (default 1h)
  --busy-policy <policy>      reject|enqueue|interrupt: a call on a busy session that sets no
                              busy_policy (default reject)
  --max-session-bytes <n>     largest stored state of one session; a turn past it fails
                              with RESOURCE_EXHAUSTED (default ${DEFAULT_SESSION_SETTINGS.records.maxSessionBytes})
  --max-buffered-chunks <n>   streamed chunks of one call that may wait for a slow reader; the
                              agent then waits for the reader (default ${DEFAULT_SESSION_SETTINGS.maxBufferedChunks})
  --max-patch-operations <n>  operations in one init.state_patch / messages_patch; more is
                              RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxPatchOperations})
  --max-patch-bytes <n>       bytes one patch may write (values added, replaced, copied or
                              moved); more is RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxPatchBytes})
  --max-waiting-input-bytes <n>
                              bytes of inputs and steers waiting on one invocation, and of
                              steers one turn takes; more is RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxWaitingInputBytes})
  --tenant-max-waiting-input-bytes <n>
                              bytes of inputs and steers waiting on all of one tenant's
                              invocations together; more is RESOURCE_EXHAUSTED, 0 = no limit
                              (default ${DEFAULT_INPUT_LIMITS.maxTenantWaitingInputBytes})
  --session-ttl <duration>    delete sessions idle this long, e.g. 30m, 7d (default: keep forever);
                              a call's init.ttl overrides it per session
  --request-ids-kept <n>      how many request IDs of committed turns each session remembers
                              to answer retries (the most recent ones; default 16)
  --request-id-ttl <duration> how long a committed request ID is remembered, e.g. 1h, 7d
                              (default 24h); a retry after that runs the input again
  --first-bytes-timeout-ms <n>
                              close a connection that has not sent enough bytes to pick its
                              protocol (HTTP/2 preface or HTTP/1.1) by then (default ${DEFAULT_CONNECTION_LIMITS.firstBytesTimeoutMs})
  --headers-timeout-ms <n>    HTTP/1.1: close (408) a request whose headers are not complete
                              by then (default ${DEFAULT_CONNECTION_LIMITS.headersTimeoutMs})
  --idle-timeout-ms <n>       close an HTTP/1.1 keep-alive connection or HTTP/2 session with no
                              request or stream open for this long (default ${DEFAULT_CONNECTION_LIMITS.idleTimeoutMs})
  --keepalive-interval-ms <n> PING an HTTP/2 session with a stream open this often (default ${DEFAULT_CONNECTION_LIMITS.keepaliveIntervalMs})
  --keepalive-timeout-ms <n>  close an HTTP/2 session (resetting its streams, ending their calls) whose
                              PING is not acknowledged within this long: a client that vanished (default ${DEFAULT_CONNECTION_LIMITS.keepaliveTimeoutMs})
  --max-connections <n>       open connections at most; more are closed at once (default ${DEFAULT_CONNECTION_LIMITS.maxConnections})
  --max-concurrent-streams <n>
                              HTTP/2 streams (calls) open at once per connection (default ${DEFAULT_CONNECTION_LIMITS.maxConcurrentStreams})
${FAIR_SHARE_USAGE}${WEBHOOK_USAGE}${MCP_USAGE}Observability (OpenTelemetry; see docs/observability.md):
  --otel                      export traces and metrics by OTLP; also on when OTEL_EXPORTER_OTLP_ENDPOINT
                              is set. Configured by the standard OTEL_* variables (protocol, service
                              name, sampler, batch delay, metric interval, ...)
  --metrics-port <port>       serve the metrics as Prometheus text on http://<metrics-host>:<port>/metrics
  --metrics-host <host>       interface of the metrics endpoint (default 127.0.0.1, whatever --host is:
                              the metrics sum every tenant's turns and tokens)
  --metrics-token-file <file> scrapes must send "authorization: Bearer <the token in file>" (else 401)
Security (see docs/security.md):
  --auth-tokens <file>        accept bearer tokens listed in <file>, one "TOKEN TENANT [SUBJECT]"
                              per line; re-read on SIGHUP
  --auth-jwks <url|file>      accept JWT bearer tokens signed by these keys (needs --auth-audience)
  --auth-audience <aud>       the "aud" a JWT must carry
  --auth-issuer <iss>         the "iss" a JWT must carry (optional)
  --auth-tenant-claim <name>  the JWT claim naming the tenant (default tenant)
  --tls-cert <file>           serve TLS with this PEM certificate chain (needs --tls-key)
  --tls-key <file>            the PEM private key of --tls-cert
  --tls-client-ca <file>      require client certificates signed by this CA (mutual TLS); without
                              another auth method the certificate (CN, O) is the caller
  --page-token-secret-file <file>
                              sign ListSessions/ListSnapshots page tokens with this secret (>= 32
                              bytes) so every instance sharing it accepts them, also after a restart
                              (default: a random key per process)
  --reflection <mode>         open|authenticated: whether reflection needs credentials (default open)
  --insecure                  allow serving a non-loopback --host without authentication, and
                              (on loopback) calls addressed to other names than localhost
  -h, --help                  show this help
  -v, --version               print the version
`;
