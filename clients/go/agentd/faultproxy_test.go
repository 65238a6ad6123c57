package agentd_test

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy is a loopback TCP proxy in front of an agentd server that resets
// client connections: each connection forwards a random number of bytes (both
// directions counted) between every/2 and every*3/2, then the proxy aborts it
// with an RST (SO_LINGER 0, then Close) and closes the upstream connection.
// Faults can be switched off to measure the proxy alone. FreezeAll makes
// the live connections look like a peer that vanished.
type faultProxy struct {
	ln     net.Listener
	target string
	every  int64
	limit  atomic.Int64 // faults stop after this many resets (0: never)
	hold   atomic.Int64 // how long a reset leaves the upstream connection open (ns)
	faults atomic.Bool
	resetN atomic.Int64

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	resets  map[net.Conn]func()       // each live client connection's reset
	freezes map[net.Conn]*atomic.Bool // each live client connection's frozen flag
}

// startFaultProxy listens on a free loopback port and forwards to target
// (host:port), resetting connections every `every` bytes on average while
// faults are on (they start on). It stops when the test ends.
func startFaultProxy(t *testing.T, target string, every int64) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy: listen: %v", err)
	}
	p := &faultProxy{ln: ln, target: target, every: every, conns: map[net.Conn]struct{}{}, resets: map[net.Conn]func(){},
		freezes: map[net.Conn]*atomic.Bool{}}
	p.faults.Store(true)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's base URL for agentd.NewClient.
func (p *faultProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Resets is the number of connections the proxy reset.
func (p *faultProxy) Resets() int64 { return p.resetN.Load() }

// SetFaults switches the resets on or off (connections are kept either way).
func (p *faultProxy) SetFaults(on bool) { p.faults.Store(on) }

// HoldUpstream makes each reset leave the server's side of the connection
// open for d, as a load balancer that resets the client does: the server
// notices the drop only then.
func (p *faultProxy) HoldUpstream(d time.Duration) { p.hold.Store(int64(d)) }

// LimitResets switches the faults off after n resets in all.
func (p *faultProxy) LimitResets(n int64) { p.limit.Store(n) }

// serve accepts client connections until the listener closes.
func (p *faultProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(client)
	}
}

// forward pipes one client connection to a new upstream connection in both
// directions, resetting both after its byte budget when faults are on.
func (p *faultProxy) forward(client net.Conn) {
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, upstream) {
		return
	}
	budget := &atomic.Int64{}
	budget.Store(p.every/2 + rand.Int64N(p.every+1))
	var upOnce, once sync.Once
	closeUpstream := func(after time.Duration) {
		upOnce.Do(func() { time.AfterFunc(after, func() { _ = upstream.Close() }) })
	}
	reset := func() {
		once.Do(func() {
			if n := p.resetN.Add(1); n == p.limit.Load() {
				p.faults.Store(false)
			}
			closeUpstream(time.Duration(p.hold.Load()))
			p.abort(client)
		})
	}
	end := func() {
		_ = client.Close()
		closeUpstream(0)
	}
	frozen := &atomic.Bool{}
	p.mu.Lock()
	if p.resets != nil {
		p.resets[client] = reset
		p.freezes[client] = frozen
	}
	p.mu.Unlock()
	go p.pipe(upstream, client, budget, frozen, reset, end)
	p.pipe(client, upstream, budget, frozen, reset, end)
	p.mu.Lock()
	delete(p.resets, client)
	delete(p.freezes, client)
	p.mu.Unlock()
}

// FreezeAll freezes every live client connection: from now on nothing is
// forwarded either way and the proxy closes neither side, even when the
// other one closes (both are closed when the proxy closes). This is what a
// peer looks like whose host crashed or whose network path dropped: no byte,
// no FIN, no RST. Connections opened later are not frozen.
func (p *faultProxy) FreezeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, frozen := range p.freezes {
		frozen.Store(true)
	}
}

// ResetAll resets every live client connection now (faults on or off).
func (p *faultProxy) ResetAll() {
	p.mu.Lock()
	resets := make([]func(), 0, len(p.resets))
	for _, reset := range p.resets {
		resets = append(resets, reset)
	}
	p.mu.Unlock()
	for _, reset := range resets {
		reset()
	}
}

// track registers the pair for close; it closes both and returns false once
// the proxy is closed.
func (p *faultProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst. While faults are on, each read is charged to the
// shared budget; the read that exhausts it is forwarded only up to the budget
// and the connection is reset (mid-frame, usually). Once frozen, what src
// sends is dropped, and its end closes nothing.
func (p *faultProxy) pipe(src, dst net.Conn, budget *atomic.Int64, frozen *atomic.Bool, reset, end func()) {
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if frozen.Load() {
			if err != nil {
				return
			}
			continue
		}
		if n > 0 {
			chunk := buf[:n]
			if p.faults.Load() {
				if left := budget.Add(-int64(n)); left < 0 {
					keep := max(int64(n)+left, 0)
					_, _ = dst.Write(chunk[:keep])
					reset()
					return
				}
			}
			if _, werr := dst.Write(chunk); werr != nil {
				break
			}
		}
		if err != nil {
			break // io.EOF or a closed connection
		}
	}
	end() // a clean end or an error on one side ends both
}

// abort resets the client connection (RST).
func (p *faultProxy) abort(client net.Conn) {
	if tcp, ok := client.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = client.Close()
}

// close stops the listener and closes every connection.
func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns, p.resets, p.freezes = nil, nil, nil
}
