package agentd_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverProcess is a real agentd server started from the repository with
// the test fixture agents and an in-memory store (unless told another).
type serverProcess struct {
	cmd      *exec.Cmd
	port     int
	stderr   *lockedWriter
	killOnce sync.Once
}

var (
	serverOnce sync.Once
	server     *serverProcess
	serverErr  error
)

// TestMain runs the tests and stops the agentd servers that were started.
func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.stop()
	}
	stopExtraServers()
	removeTestPKI()
	os.Exit(code)
}

// agentdAddr returns host:port of the shared agentd server, starting it on
// first use. The server is started lazily so the unit tests run without it.
func agentdAddr(t *testing.T) string {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = startServer() })
	if serverErr != nil {
		t.Fatalf("start agentd: %v", serverErr)
	}
	return fmt.Sprintf("127.0.0.1:%d", server.port)
}

// agentdURL returns the base URL of the shared agentd server.
func agentdURL(t *testing.T) string { return "http://" + agentdAddr(t) }

// repoRoot walks up from the test's directory to the repository root.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "src", "cli", "main.ts")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no src/cli/main.ts in any parent directory of the test")
		}
		dir = parent
	}
}

// startServer runs `tsx src/cli/main.ts serve test/fixtures/agents.ts --examples` on a
// free port, with extraArgs appended, and waits for its "agentd listening"
// log line. The store is memory: unless extraArgs holds a --store.
func startServer(extraArgs ...string) (*serverProcess, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	args := []string{"src/cli/main.ts", "serve", "test/fixtures/agents.ts", "--examples",
		"--host", "127.0.0.1", "--port", "0"}
	if !slices.Contains(extraArgs, "--store") {
		args = append(args, "--store", "memory:")
	}
	args = append(args, extraArgs...)
	cmd := exec.Command(filepath.Join(root, "node_modules", ".bin", "tsx"), args...)
	cmd.Dir = root
	// tsx runs node as a child: a process group lets stop() end both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &lockedWriter{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProcess{cmd: cmd, stderr: stderr}
	ports := make(chan int, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		sent := false
		for scanner.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Port int    `json:"port"`
			}
			if !sent && json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "agentd listening" && line.Port > 0 {
				ports <- line.Port
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		close(ports)
	}()
	select {
	case port, ok := <-ports:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("agentd exited before listening: %s", stderr.String())
		}
		p.port = port
		return p, nil
	case <-time.After(90 * time.Second):
		p.stop()
		return nil, fmt.Errorf("agentd did not log \"agentd listening\" within 90s: %s", stderr.String())
	}
}

// stop terminates the server's process group and waits for it.
func (p *serverProcess) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// kill ends the server's process group at once with SIGKILL (no shutdown, no
// drain: as if its machine died) and waits for it. Idempotent.
func (p *serverProcess) kill() {
	p.killOnce.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	})
}

// lockedWriter collects the server's stderr; safe for concurrent use.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// extraServers are agentd servers started with extra flags (auth, TLS), one
// per name, each started on first use and stopped by TestMain.
var extraServers struct {
	sync.Mutex
	byName map[string]*extraServer
}

type extraServer struct {
	once sync.Once
	proc *serverProcess
	err  error
}

// namedServerAddr returns host:port of the agentd server called name, started
// on first use with the flags args returns (called once, so it may create
// files).
func namedServerAddr(t *testing.T, name string, args func() ([]string, error)) string {
	t.Helper()
	extraServers.Lock()
	if extraServers.byName == nil {
		extraServers.byName = map[string]*extraServer{}
	}
	s := extraServers.byName[name]
	if s == nil {
		s = &extraServer{}
		extraServers.byName[name] = s
	}
	extraServers.Unlock()
	s.once.Do(func() {
		extra, err := args()
		if err != nil {
			s.err = err
			return
		}
		s.proc, s.err = startServer(extra...)
	})
	if s.err != nil {
		t.Fatalf("start agentd %s: %v", name, s.err)
	}
	return fmt.Sprintf("127.0.0.1:%d", s.proc.port)
}

// stopExtraServers stops every server namedServerAddr started.
func stopExtraServers() {
	extraServers.Lock()
	defer extraServers.Unlock()
	for _, s := range extraServers.byName {
		if s.proc != nil {
			s.proc.stop()
		}
	}
}
