// Package webwrapper runs the real desktop wrapper (cmd/webwrapper, built with -race) in
// Debian's chromium under a private Xvfb against the real app service behind the real
// gateway, and drives it as an integrator does: arguments at start, then the pipe. The
// test reads the wrapper's window through the DevTools port that Debug=True opens, and
// saves screenshots under integration/artifacts/webwrapper/.
package webwrapper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/partnergate/partnergate/appservice"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/webwrapper/instance"
	"github.com/partnergate/partnergate/webwrapper/pipe"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

const (
	password = "wrapper-instructor-password"
	chromium = "/usr/bin/chromium"
	// The names cmd/webwrapper uses in the user's folders.
	vendor  = "Svc"
	product = "Svc Webwrapper"
)

func TestMain(m *testing.M) { harness.Main(m) }

// startStack starts the gateway in front of the app service and returns the gateway's URL.
func startStack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key := harness.NewKey(t, "ES256", "ww-1")
	jwks := harness.WriteJWKS(t, dir, key)
	secret := "ww-upstream-secret-0123456789abcdef"
	appPort := harness.FreePort(t)
	gw := harness.StartCaddy(t, harness.Config{
		Caddyfile: `{
	admin {{.Admin}}
}
http://127.0.0.1:{{.Port}} {
	route /partner/* {
		jwt_partner {
			partner demo {
				jwks_file {{.Vars.jwks}}
				issuer https://partner.example
				audience partnergate-demo
			}
			upstream_secret {env.PARTNERGATE_UPSTREAM_SECRET}
		}
		reverse_proxy {{.Vars.app}}
	}
	reverse_proxy {{.Vars.app}} {
		header_up -X-Partner-*
	}
}`,
		Vars: map[string]string{"jwks": jwks, "app": "127.0.0.1:" + strconv.Itoa(appPort)},
		Env:  []string{"PARTNERGATE_UPSTREAM_SECRET=" + secret},
	})
	app, err := appservice.Start(context.Background(), appservice.Config{
		Listen:         "127.0.0.1:" + strconv.Itoa(appPort),
		Database:       filepath.Join(dir, "app.db"),
		SecretFile:     filepath.Join(dir, "app.secret"),
		PublicURL:      gw.URL,
		UpstreamSecret: secret,
		Instructor:     appservice.Instructor{Username: "instructor", Email: "coach@service.example", DisplayName: "Coach Carter", Password: password},
		Logger:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("starting the app service: %v", err)
	}
	t.Cleanup(func() { app.Shutdown(context.Background()) })
	return gw.URL
}

// display starts a private Xvfb; -displayfd has it pick a free display and say which
// once it accepts clients.
func display(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb (scripts/test-deps.sh installs it): %v", err)
	}
	_ = w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if n := strings.TrimSpace(line); err != nil || n == "" {
		t.Fatalf("Xvfb gave no display number: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// wrapper is a running cmd/webwrapper.
type wrapper struct {
	cmd     *exec.Cmd
	pipe    string
	devtool string // http://127.0.0.1:<port>
	exited  chan error
}

// userHome points the user's folders of this process and the wrapper at the test's own.
func userHome(t *testing.T) {
	home := t.TempDir()
	run := filepath.Join(home, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Setenv("TMPDIR", home) // chromium's and the debug log's temporary files
}

// startWrapper copies the binary next to an application config, starts it with args and
// waits until it says its pipe is open.
func startWrapper(t *testing.T, appURL, dpy string, args ...string) *wrapper {
	t.Helper()
	bin := harness.Binary(t, "./cmd/webwrapper")
	dir := t.TempDir()
	exe := filepath.Join(dir, "webwrapper")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe+".config", []byte(`<?xml version="1.0" encoding="utf-8"?>
<configuration><appSettings>
  <add key="AppUrl" value="`+appURL+`/app/signin"/>
  <add key="Debug" value="True"/>
  <add key="CheckForUpdates" value="False"/>
  <add key="MinimizeOnExit" value="False"/>
  <add key="Maximized" value="False"/>
</appSettings></configuration>`), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	flags := []string{"-browser", chromium,
		// Debug=True's port is 9223; a free one keeps parallel test runs apart.
		"-browser-flag", "--remote-debugging-port=" + strconv.Itoa(port),
		"-browser-flag", "--disable-gpu", "-browser-flag", "--disable-dev-shm-usage",
		"-browser-flag", "--disable-background-networking", "-browser-flag", "--disable-component-update"}
	cmd := exec.Command(exe, append(flags, args...)...)
	cmd.Env = append(os.Environ(), "DISPLAY="+dpy)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the wrapper: %v", err)
	}
	w := &wrapper{cmd: cmd, devtool: "http://127.0.0.1:" + strconv.Itoa(port), exited: make(chan error, 1)}
	open := make(chan string, 1)
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if strings.Contains(line, `msg="pipe open"`) {
				_, path, _ := strings.Cut(line, "path=")
				open <- path
			}
		}
	}()
	go func() { <-logDone; w.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("wrapper log:\n%s", log.String())
		}
	})
	select {
	case w.pipe = <-open:
	case err := <-w.exited:
		t.Fatalf("the wrapper exited before opening its pipe: %v\n%s", err, log.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("the wrapper did not open its pipe within 90s\n%s", log.String())
	}
	return w
}

// call sends one pipe request and returns the reply.
func (w *wrapper) call(t *testing.T, method string, args map[string]any) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reply, err := pipe.Call(ctx, w.pipe, method, args)
	if err != nil {
		t.Fatalf("pipe %s: %v", method, err)
	}
	if msg, ok := pipe.ReplyError(reply); ok {
		t.Fatalf("pipe %s answered an error: %s", method, msg)
	}
	return reply
}

// window attaches to the wrapper's app window over its DevTools port.
func (w *wrapper) window(t *testing.T) context.Context {
	t.Helper()
	resp, err := http.Get(w.devtool + "/json/list")
	if err != nil {
		t.Fatalf("listing the wrapper's targets: %v", err)
	}
	defer resp.Body.Close()
	var targets []struct{ ID, Type, URL string }
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, x := range targets {
		if x.Type == "page" {
			id = x.ID
		}
	}
	if id == "" {
		t.Fatalf("no page among the wrapper's targets %+v", targets)
	}
	actx, cancelAlloc := remote.NewAllocator(context.Background(), w.devtool)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithTargetID(target.ID(id)))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Do attaches; it must not carry a step's deadline, which would end the
	// connection with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("attaching to the wrapper's window: %v", err)
	}
	return ctx
}

// do runs actions on the window with a time limit. Element waits hang on a target
// attached to (engine notes), so the steps poll JavaScript conditions.
func do(t *testing.T, ctx context.Context, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		screenshot(t, ctx, "failed-"+name)
		t.Fatalf("%s: %v", name, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	dir := filepath.Join(root, "integration", "artifacts", "webwrapper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, t.Name()+"-"+name+".png"), buf, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

func TestSignOnThenPipe(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("chromium not found at %s: scripts/test-deps.sh installs it", chromium)
	}
	userHome(t)
	gateway := startStack(t)
	dpy := display(t)
	w := startWrapper(t, gateway, dpy, `provider=Svc.Desktop.Arguments.Component, Svc.Desktop`, `signon=DOMAIN\asa`)

	if got := string(w.call(t, "Version", nil)); got != "2.1.5.0" {
		t.Errorf("version = %q, want 2.1.5.0", got)
	}

	// A command needing the page waits for the sign-in; the user signs in meanwhile.
	listed := make(chan []byte, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		reply, err := pipe.Call(ctx, w.pipe, "GetListOfUsers", map[string]any{"customId": "nobody"})
		if err != nil {
			reply = []byte(err.Error())
		}
		listed <- reply
	}()
	win := w.window(t)
	do(t, win, "sign-in page", chromedp.Poll[chromedp.Void](`document.getElementById("password") !== null`, chromedp.WithPollingInterval(50*time.Millisecond)))
	screenshot(t, win, "signin")
	do(t, win, "sign in", chromedp.Evaluate[chromedp.Void](`(() => {
		document.getElementById("login").value = "instructor";
		document.getElementById("password").value = `+strconv.Quote(password)+`;
		document.getElementById("signin").click();
	})()`))
	if got := string(<-listed); got != "[]" {
		t.Fatalf("getlistofusers waiting for the sign-in = %s, want []", got)
	}
	do(t, win, "application", chromedp.Poll[chromedp.Void](`!!window.svcApp && location.pathname.startsWith("/app")`, chromedp.WithPollingInterval(50*time.Millisecond)))

	if reply := w.call(t, "SelectPerson", map[string]any{"userid": "0", "customId": "ww-1001", "firstName": "Åsa",
		"lastName": "Ørnø", "dateOfBirth": "1950-07-01", "source": "EHR"}); reply != nil {
		t.Errorf("selectperson replied %s, want none", reply)
	}
	var users []struct {
		ID        int64  `json:"id"`
		CustomID  string `json:"customId"`
		Firstname string `json:"firstname"`
	}
	if err := json.Unmarshal(w.call(t, "getlistofusers", map[string]any{"customid": "ww-1001"}), &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0].CustomID != "ww-1001" || users[0].Firstname != "Åsa" {
		t.Errorf("getlistofusers = %+v, want the person selected", users)
	}
	do(t, win, "person shown", chromedp.Poll[chromedp.Void](`(document.getElementById("contact-name")?.textContent || "").includes("Ørnø")`, chromedp.WithPollingInterval(50*time.Millisecond)))
	screenshot(t, win, "person")

	links := signon.Open(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), vendor, product, signon.FileName))
	if l, ok, err := links.Get(`DOMAIN\asa`); !ok || err != nil || l.Username != "instructor" {
		t.Errorf("sign-on link = %+v, %v, %v; want the instructor", l, ok, err)
	}

	if got := string(w.call(t, "Close", nil)); got != `{"ok":true}` {
		t.Errorf("close = %q", got)
	}
	select {
	case err := <-w.exited:
		if err != nil {
			t.Errorf("the wrapper exited with %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wrapper did not exit after close")
	}
	if _, err := os.Stat(w.pipe); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pipe after close: %v, want gone", err)
	}
	dir, err := instance.Dir(vendor, product)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	primary, inst, err := instance.Acquire(ctx, dir, nil)
	if err != nil || !primary {
		t.Fatalf("the lock after close: primary %v, %v; want free", primary, err)
	}
	inst.Close()
	user, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), vendor, product, "user.config"))
	if err != nil || !strings.Contains(string(user), `name="Width"`) {
		t.Errorf("user.config after close: %v\n%s; want the geometry saved", err, user)
	}
}
