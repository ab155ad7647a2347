// Package redistest starts real redis-server processes for tests: single servers,
// replicas, a Redis Cluster and Sentinels, each on free loopback ports, without persistence,
// stopped when the test ends. It is the Redis counterpart of net/http/httptest.
package redistest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnergate/partnergate/internal/freeport"
)

// Server is one redis-server (or Sentinel) process.
type Server struct {
	t    testing.TB
	port int
	dir  string
	args []string
	// tlsConfig is the administrative client's, for a server that speaks only TLS.
	tlsConfig *tls.Config

	mu     sync.Mutex
	cmd    *exec.Cmd
	waited chan struct{}
	client *redis.Client
}

// Start runs redis-server on a free port with the extra arguments (redis.conf directives
// as "--name value" pairs) and waits until it answers PING.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startWith(t, nil, extra...)
}

// startWith starts a server; conf, when set, writes a config file (Sentinel needs one) whose
// text may use %PORT%.
func startWith(t testing.TB, conf func(port int) string, extra ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (scripts/test-deps.sh installs it): %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		dir := t.TempDir()
		port := freeport.For(t)
		var args []string
		if conf != nil {
			path := filepath.Join(dir, "sentinel.conf")
			if err := os.WriteFile(path, []byte(conf(port)), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, path, "--sentinel")
		}
		args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
		args = append(args, extra...)
		s := &Server{t: t, port: port, dir: dir, args: args}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return nil
}

func (s *Server) start() error {
	cmd := exec.Command("redis-server", s.args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	s.mu.Lock()
	s.cmd, s.waited = cmd, waited
	s.mu.Unlock()

	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second, TLSConfig: s.tlsConfig})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		// a server started with requirepass answers NOAUTH: it is up
		if err == nil || strings.HasPrefix(err.Error(), "NOAUTH") {
			return nil
		}
		select {
		case <-waited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited: %s %s", stderr.String(), tail(log))
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on port %d did not answer PING: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Kill stops the process at once (SIGKILL: no shutdown save) and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, waited := s.cmd, s.waited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-waited
}

// Restart starts the server again on the same port with the same arguments, empty (there
// is no persistence), as after a crash.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

// Pause makes the server stop answering until the returned resume is called, as an
// overloaded or stalled node does: the process is stopped (SIGSTOP), while the kernel still
// accepts connections and buffers what clients send. Pause returns once the process has
// stopped. resume lets it run again and returns once it answers again; by then it has run
// every command that clients had sent it before resume was called.
func (s *Server) Pause() (resume func()) {
	s.t.Helper()
	if err := s.pause(); err != nil {
		s.t.Fatalf("stopping redis-server on port %d: %v", s.port, err)
	}
	var once sync.Once
	resume = func() {
		s.t.Helper()
		once.Do(func() {
			if err := s.resume(); err != nil {
				s.t.Fatalf("resuming redis-server on port %d: %v", s.port, err)
			}
		})
	}
	return resume
}

// Stall makes the server stop answering for d, as Pause does, and returns once it has
// stopped; the channel is closed when it answers again.
func (s *Server) Stall(d time.Duration) <-chan struct{} {
	s.t.Helper()
	if err := s.pause(); err != nil {
		s.t.Fatalf("stopping redis-server on port %d: %v", s.port, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		if err := s.resume(); err != nil {
			s.t.Errorf("resuming redis-server on port %d: %v", s.port, err)
		}
	}()
	// the test must not end (and report) while the goroutine may still use s.t
	s.t.Cleanup(func() { <-done })
	return done
}

// pause stops the process and waits until the kernel reports it stopped.
func (s *Server) pause() error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("the server is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	// The signal takes effect asynchronously. Where /proc shows the process state, wait
	// for "T" (stopped); elsewhere wait until a PING goes unanswered.
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	if _, err := os.Stat(stat); err == nil {
		return waitFor(30*time.Second, func() bool {
			b, err := os.ReadFile(stat)
			// the state follows the command name, which is in parentheses
			i := bytes.LastIndexByte(b, ')')
			return err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'T'
		})
	}
	probe := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 50 * time.Millisecond, TLSConfig: s.tlsConfig})
	defer probe.Close()
	return waitFor(30*time.Second, func() bool { return probe.Ping(context.Background()).Err() != nil })
}

// resume continues the stopped process and waits until it answers PING. The PING, on a
// connection made after SIGCONT, is read no earlier than the commands waiting in the
// sockets of the stop, and Redis writes the replies of one event-loop pass only after it
// has run every command that pass read: the reply comes after they have all run.
func (s *Server) resume() error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("the server is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 30 * time.Second, TLSConfig: s.tlsConfig})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil && !strings.HasPrefix(err.Error(), "NOAUTH") {
		return err
	}
	return nil
}

// waitFor polls cond until it holds, or fails after within.
func waitFor(within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Client is an administrative client of this server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, TLSConfig: s.tlsConfig})
		c := s.client
		s.t.Cleanup(func() { c.Close() })
	}
	return s.client
}

// Do runs one command on the server through the administrative client and fails the test
// on error.
func (s *Server) Do(args ...any) any {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := s.Client().Do(ctx, args...).Result()
	if err != nil {
		s.t.Fatalf("redis %v: %v", args, err)
	}
	return v
}

// StartCluster starts n cluster-enabled masters (no replicas) with the extra arguments,
// joins them with redis-cli --cluster create and waits until every node reports
// cluster_state:ok.
func StartCluster(t testing.TB, n int, extra ...string) []*Server {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is not installed (scripts/test-deps.sh installs it): %v", err)
	}
	nodes := make([]*Server, n)
	addrs := make([]string, n)
	for i := range nodes {
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(freeport.For(t)), "--cluster-node-timeout", "2000"}, extra...)
		nodes[i] = Start(t, args...)
		addrs[i] = nodes[i].Addr()
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range nodes {
		for {
			info, err := s.Client().ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ok: %v %s", s.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes
}

// StartSentinel starts a Sentinel that monitors master under name with quorum 1 and fast
// failure detection.
func StartSentinel(t testing.TB, name string, master *Server) *Server {
	t.Helper()
	return startWith(t, func(port int) string {
		return fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n"+
			"sentinel parallel-syncs %s 1\n", name, master.Port(), name, name, name)
	})
}
