package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/linkflow"
)

// TestRunScript runs ./run.sh as a person does, on free ports and temporary data folders:
// its checks before it starts anything, --check (the README's first command in its
// self-test mode), and an operator's own Caddyfile. run.sh builds ./caddy and bin/ beside
// itself; it runs from a temporary folder of links to the checkout's files (linkTree), so
// that they land there and not in the source tree. The subtests that start the stack share
// one such folder, so only the first of them builds.
func TestRunScript(t *testing.T) {
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}

	// A second gateway on the gateway's port (one that answers 200 to everything) and any
	// listener on the app service's port: run.sh names the port, its holder and the
	// variable that moves it, and starts, builds and asks nothing.
	t.Run("busy gateway port", func(t *testing.T) {
		var asked atomic.Int64
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Add(1)
			w.Write([]byte("ok\n"))
		}))
		defer other.Close()
		ports := freePorts(t)
		ports.gateway = other.Listener.Addr().(*net.TCPAddr).Port
		refusedBeforeStart(t, linkTree(t, root), ports, ports.gateway, "the gateway", "PARTNERGATE_DEMO_PORT=")
		if n := asked.Load(); n != 0 {
			t.Errorf("run.sh sent %d requests to the other gateway, want none", n)
		}
	})
	t.Run("foreign listener on the app port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports := freePorts(t)
		ports.app = l.Addr().(*net.TCPAddr).Port
		refusedBeforeStart(t, linkTree(t, root), ports, ports.app, "the app service", "PARTNERGATE_DEMO_APP_PORT=")
	})

	tree := linkTree(t, root)

	// run.sh is plain POSIX shell, so that any bash runs it (macOS's is 3.2, which has no
	// wait -n; Debian packages no bash older than 5.2): dash, Debian's sh, runs it too.
	t.Run("a POSIX shell", func(t *testing.T) {
		dash, err := exec.LookPath("dash")
		if err != nil {
			t.Fatalf("dash, Debian's /bin/sh, is missing: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, dash, filepath.Join(tree, "run.sh"), "--help")
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "./run.sh --check   start,") || !strings.Contains(string(out), "PARTNERGATE_DEMO_ADMIN_PORT") {
			t.Errorf("dash run.sh --help = %v:\n%s", err, out)
		}
		cmd = exec.CommandContext(ctx, dash, filepath.Join(tree, "run.sh"), "--no-such-flag")
		out, err = cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), "run.sh: unknown argument --no-such-flag (use --check or --help)") {
			t.Errorf("dash run.sh --no-such-flag = %v, want exit status 2 naming the argument:\n%s", err, out)
		}
	})

	t.Run("check on free ports", func(t *testing.T) {
		data := t.TempDir()
		// A leftover run.pid naming a live process that is not a run.sh (this test) does
		// not hold the folder.
		if err := os.WriteFile(filepath.Join(data, "run.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runScript(t, tree, freePorts(t), data, nil, "--check")
		if err != nil || !strings.Contains(out, "run.sh --check: passed") {
			t.Fatalf("./run.sh --check = %v\n%s", err, out)
		}
		// The flow reaches what the service is for: the member sees the plan made for them.
		if !strings.Contains(out, "run.sh --check: the Go member sees 1 plan(s) ok") {
			t.Errorf("./run.sh --check did not see the Go member's plan:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(data, "run.pid")); !os.IsNotExist(err) {
			t.Errorf("run.pid after --check: %v, want it removed", err)
		}
	})

	// A gateway that takes the port after run.sh checked it (while it builds), and answers
	// 200 to everything: run.sh waits for its own processes and the run's identifier, so it
	// stops instead of sending its links there.
	t.Run("gateway port taken after the check", func(t *testing.T) {
		p := freePorts(t)
		run := startScript(t, tree, p, t.TempDir(), nil, "--check")
		run.waitFor(t, "== building")
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p.gateway))
		if err != nil {
			t.Fatal(err)
		}
		var partner atomic.Int64
		other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/partner/") {
				partner.Add(1)
			}
			w.Write([]byte("ok\n"))
		})}
		go other.Serve(l)
		defer other.Close()
		out, err := run.wait(t)
		if err == nil || strings.Contains(out, "passed") {
			t.Fatalf("./run.sh --check with another gateway on its port = %v, want it to fail:\n%s", err, out)
		}
		if !strings.Contains(out, fmt.Sprintf("run.sh: port %d answers without this run's identifier", p.gateway)) &&
			!strings.Contains(out, "run.sh: a process it started exited") {
			t.Errorf("./run.sh --check does not say that the gateway is not its own:\n%s", out)
		}
		if n := partner.Load(); n != 0 {
			t.Errorf("run.sh sent %d links to the other gateway, want none", n)
		}
	})

	// An operator's Caddyfile is run as it is and never written to. While that stack runs,
	// a --check on its data folder, or on its gateway's port, fails before it starts.
	t.Run("operator's Caddyfile", func(t *testing.T) {
		data := t.TempDir()
		ports := freePorts(t)
		file := filepath.Join(t.TempDir(), "operator.Caddyfile")
		text := operatorCaddyfile(t, root, ports, filepath.Join(data, "demo", "jwks.json"))
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		before, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}

		run := startScript(t, tree, ports, data, []string{"PARTNERGATE_CADDYFILE=" + file})
		out := run.waitFor(t, "partnergate is running.")
		if want := "using the Caddyfile " + file + " as it is"; !strings.Contains(out, want) {
			t.Errorf("run.sh's output has no %q:\n%s", want, out)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(ports.gateway)+"/healthz", nil)
		req.Host = "localhost:" + strconv.Itoa(ports.gateway)
		if res := harness.Do(t, req); res.StatusCode != http.StatusOK {
			t.Errorf("GET /healthz through the operator's Caddyfile = %d %s, want 200", res.StatusCode, res.Body)
		}
		goLinkShowsPlan(t, tree, out)

		out, err = runScript(t, tree, freePorts(t), data, nil, "--check")
		if want := "run.sh: the data folder " + data + " is in use by another run.sh"; err == nil || !strings.Contains(out, want) || strings.Contains(out, "passed") {
			t.Errorf("./run.sh --check on a running copy's data folder = %v, want it to fail with %q:\n%s", err, want, out)
		}
		other := freePorts(t)
		other.gateway = ports.gateway
		out, err = runScript(t, tree, other, t.TempDir(), nil, "--check")
		if want := fmt.Sprintf("run.sh: port %d (the gateway) is in use by caddy (pid ", ports.gateway); err == nil || !strings.Contains(out, want) || strings.Contains(out, "passed") {
			t.Errorf("./run.sh --check on a running copy's gateway port = %v, want it to fail with %q:\n%s", err, want, out)
		}

		run.stop(t)
		after, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != text {
			t.Errorf("the operator's Caddyfile changed:\n%s\nwant\n%s", after, text)
		}
		if st, err := os.Stat(file); err != nil || !st.ModTime().Equal(before.ModTime()) {
			t.Errorf("the operator's Caddyfile was written to (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(data, "demo", "Caddyfile")); !os.IsNotExist(err) {
			t.Errorf("run.sh generated its own Caddyfile beside the operator's (%v)", err)
		}
	})

	t.Run("operator's Caddyfile without the demo partner", func(t *testing.T) {
		ports := freePorts(t)
		file := filepath.Join(t.TempDir(), "operator.Caddyfile")
		text := fmt.Sprintf("{\n\tadmin 127.0.0.1:%d\n}\n\nhttp://localhost:%d {\n\treverse_proxy 127.0.0.1:%d\n}\n", ports.admin, ports.gateway, ports.app)
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runScript(t, tree, ports, t.TempDir(), []string{"PARTNERGATE_CADDYFILE=" + file}, "--check")
		if want := file + " has no jwt_partner route for the partner demo"; err == nil || !strings.Contains(out, want) {
			t.Errorf("./run.sh --check = %v, want it to fail with %q:\n%s", err, want, out)
		}
		if after, err := os.ReadFile(file); err != nil || string(after) != text {
			t.Errorf("the operator's Caddyfile changed (%v):\n%s", err, after)
		}
	})
}

// goLinkShowsPlan runs the Go link command run.sh printed (out), as a newcomer does but
// without --open, follows the login URL it prints in a browser's stead and reads the
// member's plans: Ola, the demo links' contact, has one from the start.
func goLinkShowsPlan(t *testing.T, tree, out string) {
	t.Helper()
	var command string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.Contains(line, "go-link.json --open") {
			command = strings.TrimSuffix(line, " --open")
		}
	}
	if command == "" {
		t.Fatalf("run.sh printed no Go link command:\n%s", out)
	}
	send := exec.Command("sh", "-c", command)
	send.Dir = tree
	url, err := send.Output()
	if err != nil {
		t.Fatalf("%s = %v", command, err)
	}
	login, err := neturl.Parse(strings.TrimSpace(string(url)))
	if err != nil || login.Path != "/app/login" {
		t.Fatalf("%s printed %q, not a login URL", command, url)
	}
	// A browser new to the member's account, whose person answers its question with
	// Continue (internal/linkflow, which run.sh --check walks too).
	b, err := linkflow.NewBrowser(login.Scheme+"://"+login.Host, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	page, err := b.OpenLogin(ctx, login.String())
	if err != nil {
		t.Fatal(err)
	}
	if page.Status != http.StatusOK || page.Path() != "/go" {
		t.Fatalf("the Go login led to %s, want 200 /go", page)
	}
	plans, err := b.MyPlans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || plans[0].Name != "Knee rehabilitation, week 1" || plans[0].ExerciseCount == 0 {
		t.Errorf("the demo member's plans = %+v, want the plan Knee rehabilitation, week 1 with its exercises", plans)
	}
}

// ports are run.sh's gateway, app service and Caddy admin ports.
type ports struct{ gateway, app, admin int }

func freePorts(t *testing.T) ports {
	return ports{freeport.For(t), freeport.For(t), freeport.For(t)}
}

// scriptCommand is run.sh in tree with the ports, the data folder and extra environment.
func scriptCommand(ctx context.Context, tree string, p ports, data string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(tree, "run.sh"), args...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(),
		"PARTNERGATE_DEMO_DATA="+data,
		"PARTNERGATE_DEMO_PORT="+strconv.Itoa(p.gateway),
		"PARTNERGATE_DEMO_APP_PORT="+strconv.Itoa(p.app),
		"PARTNERGATE_DEMO_ADMIN_PORT="+strconv.Itoa(p.admin),
	)
	cmd.Env = append(cmd.Env, env...)
	// SIGTERM, which run.sh traps to stop what it started; the deadline only keeps a broken
	// run from hanging the suite.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// runScript runs run.sh to its end and returns its output.
func runScript(t *testing.T, tree string, p ports, data string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := scriptCommand(ctx, tree, p, data, env, args...).CombinedOutput()
	return string(out), err
}

// refusedBeforeStart runs run.sh --check with the given port busy: it must fail naming the
// port, what it is for, its holder (this test process, when ss or lsof can tell) and the
// variable that moves it, and have built, started and written nothing.
func refusedBeforeStart(t *testing.T, tree string, p ports, busy int, what, variable string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	out, err := runScript(t, tree, p, data, nil, "--check")
	want := fmt.Sprintf("run.sh: port %d (%s) is in use by ", busy, what)
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, variable) || !strings.Contains(out, "run.sh: nothing was started") {
		t.Fatalf("./run.sh --check = %v, want it to fail with %q, naming %s:\n%s", err, want, variable, out)
	}
	if canName() && !strings.Contains(out, fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Errorf("run.sh does not name the holder, this test (pid %d):\n%s", os.Getpid(), out)
	}
	// run.sh's own command, bin/demo, is built before it can check anything; nothing else.
	for _, name := range []string{"caddy", "bin/appservice", "bin/partnerlink", "data"} {
		if _, err := os.Stat(filepath.Join(tree, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists after the refusal (%v): run.sh went on", name, err)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data folder exists after the refusal (%v): run.sh went on", err)
	}
	for _, port := range []int{p.gateway, p.app, p.admin} {
		if port == busy {
			continue
		}
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			t.Errorf("port %d answers after the refusal: run.sh started something", port)
		}
	}
}

// canName reports whether run.sh can name a port's holder: ss or lsof is installed.
func canName() bool {
	for _, tool := range []string{"ss", "lsof"} {
		if _, err := exec.LookPath(tool); err == nil {
			return true
		}
	}
	return false
}

// operatorCaddyfile is Caddyfile.example for the given ports and key set, as an operator
// would adapt it: its placeholders replaced by the values.
func operatorCaddyfile(t *testing.T, root string, p ports, jwks string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, r := range []struct{ old, new string }{
		{"{$PARTNERGATE_DEMO_PORT:8080}", strconv.Itoa(p.gateway)},
		{"{$PARTNERGATE_DEMO_APP_PORT:9080}", strconv.Itoa(p.app)},
		{"{$PARTNERGATE_DEMO_ADMIN_PORT:2019}", strconv.Itoa(p.admin)},
		{"{$PARTNERGATE_DEMO_DATA:./data}/demo/jwks.json", jwks},
	} {
		if !strings.Contains(text, r.old) {
			t.Fatalf("Caddyfile.example has no %q: update this test and cmd/demo together", r.old)
		}
		text = strings.ReplaceAll(text, r.old, r.new)
	}
	return "# The operator's own Caddyfile.\n" + text
}

// script is a run.sh that keeps running.
type script struct {
	cmd    *exec.Cmd
	out    *harness.SyncBuffer
	done   chan struct{}
	cancel context.CancelFunc
	err    error // the exit error, once done is closed
}

func startScript(t *testing.T, tree string, p ports, data string, env []string, args ...string) *script {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	s := &script{out: &harness.SyncBuffer{}, done: make(chan struct{}), cancel: cancel}
	s.cmd = scriptCommand(ctx, tree, p, data, env, args...)
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// waitFor waits until the output holds want and returns it; it fails if run.sh ends first.
func (s *script) waitFor(t *testing.T, want string) string {
	t.Helper()
	for {
		if out := s.out.String(); strings.Contains(out, want) {
			return out
		}
		select {
		case <-s.done:
			t.Fatalf("run.sh ended (%v) before printing %q:\n%s", s.cmd.ProcessState, want, s.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wait waits for run.sh to end by itself and returns its output and exit error.
func (s *script) wait(t *testing.T) (string, error) {
	t.Helper()
	<-s.done
	s.cancel()
	return s.out.String(), s.err
}

// stop sends SIGTERM, as Ctrl-C would stop a person's run, and waits for run.sh to stop
// what it started.
func (s *script) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		<-s.done
	}
	s.cancel()
}

// linkTree returns a temporary folder with a symbolic link to each top-level entry of the
// checkout at root, except the ones run.sh writes (caddy, bin, data) and .git (so that the
// builds there carry no version control stamp to look up).
func linkTree(t *testing.T, root string) string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	for _, e := range entries {
		switch e.Name() {
		case "caddy", "bin", "data", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(tree, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}
