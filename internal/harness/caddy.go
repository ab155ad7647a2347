// Package harness runs partnergate end to end in tests: it builds the caddy binary with the
// project's modules and the race detector once per test process, starts it with a
// templated Caddyfile on free ports, records what reaches the upstream, and makes partner
// keys, key sets and tokens (with jwx directly, so it does not depend on the partner kit it
// may be used to test). Main removes the build after the tests; a package that uses the
// harness's programs runs its tests through it:
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
// A typical test:
//
//	up := harness.NewUpstream(t)
//	key := harness.NewKey(t, "RS256", "k1")
//	jwks := harness.WriteJWKS(t, t.TempDir(), key)
//	c := harness.StartCaddy(t, harness.Config{
//		Caddyfile: `{
//			admin {{.Admin}}
//		}
//		http://127.0.0.1:{{.Port}} {
//			route /partner/* {
//				jwt_partner {
//					partner demo {
//						jwks_file {{.Vars.jwks}}
//						issuer https://partner.example
//						audience partnergate-demo
//					}
//				}
//				reverse_proxy {{.Vars.upstream}}
//			}
//		}`,
//		Vars: map[string]string{"jwks": jwks, "upstream": up.Addr()},
//	})
//	tok := key.Sign(t, harness.Token{Issuer: "https://partner.example", Audience: "partnergate-demo"})
//	resp := c.PostURL(t, "demo", tok)
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
)

// ModuleRoot returns the directory of the repository's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("finding the module root: not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// Config describes a Caddy to start.
type Config struct {
	// Caddyfile is a text/template. It sees {{.Port}} (a free port for the site),
	// {{.Admin}} (a free admin address, 127.0.0.1:port), {{.Dir}} (the working directory)
	// and {{.Vars.name}}.
	Caddyfile string
	// Vars are the test's own template values.
	Vars map[string]string
	// Env is added to the environment of the caddy process.
	Env []string
	// Dir is the working directory; default a new temporary directory.
	Dir string
}

// Caddy is a running caddy process.
type Caddy struct {
	// URL is the site's base URL, http://127.0.0.1:port.
	URL string
	// Port is the site's port; Admin the admin address.
	Port  int
	Admin string
	// Dir is the process's working directory; Caddyfile the file it runs.
	Dir       string
	Caddyfile string
	// Transport, when set, carries Post's requests: an HTTPS site's, which trusts the
	// site's certificate and reaches its host name on loopback. nil: the default.
	Transport http.RoundTripper

	cmd  *exec.Cmd
	logs *SyncBuffer
	done chan struct{}
}

// Render fills in the Caddyfile template of cfg with a free port and admin address.
func Render(t testing.TB, cfg Config) (text string, port int, admin string) {
	t.Helper()
	tmpl, err := template.New("Caddyfile").Option("missingkey=error").Parse(cfg.Caddyfile)
	if err != nil {
		t.Fatalf("parsing the Caddyfile template: %v", err)
	}
	port = freeport.For(t)
	admin = "127.0.0.1:" + strconv.Itoa(freeport.For(t))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{"Port": port, "Admin": admin, "Dir": cfg.Dir, "Vars": cfg.Vars}); err != nil {
		t.Fatalf("rendering the Caddyfile template: %v", err)
	}
	return b.String(), port, admin
}

// StartCaddy starts caddy with cfg, waits until the site's port accepts connections and
// stops the process in t.Cleanup. It fails the test if caddy exits or does not become
// ready within 60s, with caddy's output in the message, and, at cleanup, if the race
// detector reported a data race in the process.
func StartCaddy(t testing.TB, cfg Config) *Caddy {
	t.Helper()
	bin := caddyBinary(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	text, port, admin := Render(t, cfg)
	file := filepath.Join(cfg.Dir, "Caddyfile")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Caddy{
		URL:       "http://127.0.0.1:" + strconv.Itoa(port),
		Port:      port,
		Admin:     admin,
		Dir:       cfg.Dir,
		Caddyfile: file,
		logs:      &SyncBuffer{},
		done:      make(chan struct{}),
	}
	c.cmd = exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
	c.cmd.Dir = cfg.Dir
	c.cmd.Env = append(append(os.Environ(), "HOME="+cfg.Dir, "XDG_DATA_HOME="+cfg.Dir, "XDG_CONFIG_HOME="+cfg.Dir), cfg.Env...)
	c.cmd.Stdout = c.logs
	c.cmd.Stderr = c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting caddy: %v", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.Stop()
		if err := RaceReported(c.Logs(), c.cmd.ProcessState.ExitCode()); err != nil {
			t.Errorf("caddy (%s): %v\n%s", c.Caddyfile, err, c.Logs())
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
			t.Fatalf("caddy exited before it was ready:\n%s", c.Logs())
		default:
		}
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			conn.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy not ready after 60s:\n%s", c.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops caddy gracefully (SIGINT), killing it after 10s. Safe to call twice.
func (c *Caddy) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// Logs returns everything caddy wrote to stdout and stderr so far: its own log, and the
// access log when the Caddyfile sends it to stderr.
func (c *Caddy) Logs() string { return c.logs.String() }

// Reload makes the running caddy load a new Caddyfile rendered from cfg's template with
// the same port and admin address, through `caddy reload`.
func (c *Caddy) Reload(t testing.TB, caddyfile string, vars map[string]string) {
	t.Helper()
	tmpl, err := template.New("Caddyfile").Option("missingkey=error").Parse(caddyfile)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{"Port": c.Port, "Admin": c.Admin, "Dir": c.Dir, "Vars": vars}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Caddyfile, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := RunCaddy(t, c.Dir, "reload", "--config", c.Caddyfile, "--adapter", "caddyfile", "--address", c.Admin)
	if err != nil {
		t.Fatalf("caddy reload: %v\n%s", err, out)
	}
}

// RunCaddy runs the caddy binary with args in dir (for validate, adapt, list-modules) and
// returns its combined output. A data race in the run fails the test.
func RunCaddy(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddyBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if rerr := RaceReported(string(out), cmd.ProcessState.ExitCode()); rerr != nil {
		t.Errorf("caddy %s: %v\n%s", strings.Join(args, " "), rerr, out)
	}
	return string(out), err
}

// raceExitCode is the race detector's exit status of a program that had a data race and
// would otherwise have exited 0 (GORACE exitcode, default 66).
const raceExitCode = 66

// RaceReported returns an error when a -race build's output or exit status says it ran
// into a data race: the detector prints its report and lets the program go on, so a caddy
// with a race still answers every request right and only its stderr and exit status tell.
func RaceReported(output string, exitCode int) error {
	switch {
	case strings.Contains(output, "WARNING: DATA RACE"):
		return errors.New("the race detector reported a data race in the module's code")
	case exitCode == raceExitCode:
		return fmt.Errorf("exited %d, the race detector's status for a data race", raceExitCode)
	}
	return nil
}

// Post sends a POST to path with the given content type and body and returns the
// response with its body read.
func (c *Caddy) Post(t testing.TB, path, contentType, body string, header http.Header) *Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := send(c.Transport, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// PostURL posts tok to /partner/{partner}/url as text/plain.
func (c *Caddy) PostURL(t testing.TB, partner, tok string) *Response {
	t.Helper()
	return c.Post(t, "/partner/"+partner+"/url", "text/plain", tok, nil)
}

// PostPayload posts tok to /partner/{partner}/payload as the form field payload.
func (c *Caddy) PostPayload(t testing.TB, partner, tok string) *Response {
	t.Helper()
	return c.Post(t, "/partner/"+partner+"/payload", "application/x-www-form-urlencoded", "payload="+urlQueryEscape(tok), nil)
}

// Response is an HTTP response with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// Do sends req (with a 30s timeout, no redirects followed) and reads the response.
func Do(t testing.TB, req *http.Request) *Response {
	t.Helper()
	resp, err := Send(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Send is Do for a goroutine other than the test's, which must not call t.Fatal: it
// returns the error instead.
func Send(req *http.Request) (*Response, error) { return send(nil, req) }

// send is Send through rt (nil: the default transport).
func send(rt http.RoundTripper, req *http.Request) (*Response, error) {
	client := &http.Client{
		Transport:     rt,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("reading the response of %s %s: %v", req.Method, req.URL, err)
	}
	return &Response{Response: resp, Body: b.Bytes()}, nil
}

// SyncBuffer is a bytes.Buffer that a process's output and a test may use at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
