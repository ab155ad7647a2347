package webwrapper

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/appstack"
)

// missing names the Debian packages of the programs the tests need that are not installed.
func missing(programs map[string]string) []string {
	var pkgs []string
	for prog, pkg := range programs {
		if _, err := exec.LookPath(prog); err != nil {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// desktop is one user's session: a private X display with a window manager, the user's
// own home, config, cache, data and runtime folders, and an installed wrapper (a copy of
// the binary with its application config beside it). Single instance, user.config and
// the pipe are the test's alone.
type desktop struct {
	display string
	home    string
	cache   string
	runtime string
	tmp     string
	exe     string
	stack   *appstack.Stack
	noDebug bool   // the wrapper runs without Debug, so without the DevTools port
	bus     string // the session bus's address (notifications), "" for none
	lastID  int64  // the newest notification the test has read
	path    string // PATH in the session, "" for the test's
}

// newDesktop starts the display and installs the wrapper with the application settings
// (appSettings keys) over the defaults the tests use: the stack's sign-in page, Debug on,
// no update check, a normal window, and closing the window ends the program.
func newDesktop(t *testing.T, s *appstack.Stack, settings map[string]string) *desktop {
	t.Helper()
	if pkgs := missing(map[string]string{"Xvfb": "xvfb", "xauth": "xauth", "openbox": "openbox", "xprop": "x11-utils", "chromium": "chromium"}); len(pkgs) > 0 {
		t.Fatalf("the wrapper's integration test needs a display and a browser: apt-get install -y %s (scripts/test-deps.sh does)", strings.Join(pkgs, " "))
	}
	if settings["Debug"] != "False" {
		checkDebugPortFree(t) // the wrapper's DevTools port is the machine's one
	}
	root := t.TempDir()
	d := &desktop{
		home:    filepath.Join(root, "home"),
		cache:   filepath.Join(root, "cache"),
		runtime: filepath.Join(root, "run"),
		tmp:     filepath.Join(root, "tmp"),
		stack:   s,
	}
	for _, dir := range []string{d.home, d.cache, d.runtime, d.tmp, filepath.Join(root, "config"), filepath.Join(root, "data"), filepath.Join(root, "app")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d.startDisplay(t)

	d.exe = filepath.Join(root, "app", "webwrapper")
	copyFile(t, harness.Binary(t, "./cmd/webwrapper"), d.exe)
	appURL := "http://127.0.0.1:9/app/signin" // no service: a test of a wrapper that cannot start
	if s != nil {
		appURL = s.Gateway.URL + "/app/signin"
	}
	all := map[string]string{
		"AppUrl":          appURL,
		"Debug":           "True",
		"CheckForUpdates": "False",
		"Maximized":       "False",
		"Left":            "20",
		"Top":             "20",
		"Width":           "1100",
		"Height":          "820",
		"MinimizeOnExit":  "False",
	}
	for k, v := range settings {
		all[k] = v
	}
	writeAppConfig(t, d.exe+".config", all)
	return d
}

// otherSession is a second desktop session of the same user beside d, as a terminal
// server gives one user two: its own display (Xvfb with openbox), the same home, config,
// cache, data and runtime folders, and the same program installed a second time with
// the application settings over d's (Debug off: the DevTools port is d's wrapper's).
func (d *desktop) otherSession(t *testing.T, settings map[string]string) *desktop {
	t.Helper()
	o := *d
	o.noDebug = true
	o.startDisplay(t)
	o.exe = filepath.Join(filepath.Dir(d.home), "app2", "webwrapper")
	if err := os.MkdirAll(filepath.Dir(o.exe), 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, d.exe, o.exe)
	all := map[string]string{
		"AppUrl": d.stack.Gateway.URL + "/app/signin", "CheckForUpdates": "False", "Maximized": "False",
		"Left": "20", "Top": "20", "Width": "1100", "Height": "820", "MinimizeOnExit": "False",
	}
	for k, v := range settings {
		all[k] = v
	}
	writeAppConfig(t, o.exe+".config", all)
	return &o
}

// env is the environment of the wrapper and its helpers in this session.
func (d *desktop) env() []string {
	root := filepath.Dir(d.home)
	path := os.Getenv("PATH")
	if d.path != "" {
		path = d.path
	}
	env := []string{
		"PATH=" + path,
		"DISPLAY=" + d.display,
		"HOME=" + d.home,
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"XDG_CACHE_HOME=" + d.cache,
		"XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_RUNTIME_DIR=" + d.runtime,
		"TMPDIR=" + d.tmp,
		"LANG=C.UTF-8",
	}
	if d.bus != "" {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS="+d.bus)
	}
	return env
}

// startDisplay starts Xvfb on a free display (-displayfd) and openbox on it, and waits
// until openbox manages the screen.
func (d *desktop) startDisplay(t *testing.T) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1600x1200x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	var xlog harness.SyncBuffer
	xvfb.Stdout, xvfb.Stderr = &xlog, &xlog
	if err := xvfb.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() { harness.StopXServer(xvfb) })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Fatalf("Xvfb gave no display number:\n%s", xlog.String())
		}
		d.display = ":" + n
	case <-time.After(20 * time.Second):
		t.Fatalf("Xvfb did not start within 20s:\n%s", xlog.String())
	}

	wm := exec.Command("openbox", "--sm-disable")
	wm.Env = d.env()
	var wmlog harness.SyncBuffer
	wm.Stdout, wm.Stderr = &wmlog, &wmlog
	if err := wm.Start(); err != nil {
		t.Fatalf("starting openbox: %v", err)
	}
	t.Cleanup(func() { _ = wm.Process.Kill(); _ = wm.Wait() })
	poll(t, 20*time.Second, "openbox manages the display", func() (bool, string) {
		out := d.xprop(t, "-root", "_NET_SUPPORTING_WM_CHECK")
		return strings.Contains(out, "window id"), out + wmlog.String()
	})
}

// xprop runs xprop on the session's display and returns its output (errors included).
func (d *desktop) xprop(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("xprop", args...)
	cmd.Env = d.env()
	out, _ := cmd.CombinedOutput()
	return string(out)
}

var windowIDs = regexp.MustCompile(`0x[0-9a-f]+`)

// windowState is the state of the wrapper's top-level windows as the window manager
// keeps it: "normal", "iconic" (minimised, or hidden) or "none" without a window, and
// whether one of them is the active window.
func (d *desktop) windowState(t *testing.T) (state string, active bool) {
	t.Helper()
	list := d.xprop(t, "-root", "_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW")
	var clients, act string
	for _, l := range strings.Split(list, "\n") {
		switch {
		case strings.HasPrefix(l, "_NET_CLIENT_LIST"):
			clients = l
		case strings.HasPrefix(l, "_NET_ACTIVE_WINDOW"):
			act = windowIDs.FindString(l)
		}
	}
	state = "none"
	for _, id := range windowIDs.FindAllString(clients, -1) {
		props := d.xprop(t, "-id", id, "WM_STATE", "_NET_WM_STATE")
		if strings.Contains(props, "Iconic") || strings.Contains(props, "_NET_WM_STATE_HIDDEN") {
			if state == "none" {
				state = "iconic"
			}
		} else if strings.Contains(props, "Normal") {
			state = "normal"
		}
		if id == act {
			active = true
		}
	}
	return state, active
}

// waitTaskbar waits until the wrapper's window is in the taskbar (want true) or out of it
// (_NET_WM_STATE_SKIP_TASKBAR, as the window manager keeps it).
func (d *desktop) waitTaskbar(t *testing.T, want bool) {
	t.Helper()
	poll(t, 20*time.Second, fmt.Sprintf("window in the taskbar %v", want), func() (bool, string) {
		list := d.xprop(t, "-root", "_NET_CLIENT_LIST")
		var states []string
		in := false
		for _, id := range windowIDs.FindAllString(list, -1) {
			props := d.xprop(t, "-id", id, "_NET_WM_STATE")
			states = append(states, props)
			if !strings.Contains(props, "_NET_WM_STATE_SKIP_TASKBAR") {
				in = true
			}
		}
		return len(states) > 0 && in == want, strings.Join(states, "; ")
	})
}

// waitWindow waits until the wrapper's window is in state (and active when the state is
// normal: show brings it to the front).
func (d *desktop) waitWindow(t *testing.T, want string) {
	t.Helper()
	poll(t, 20*time.Second, "window "+want, func() (bool, string) {
		state, active := d.windowState(t)
		return state == want && (want != "normal" || active), fmt.Sprintf("state %s, active %v", state, active)
	})
}

// lockPath is the single-instance lock file of the session.
func (d *desktop) lockPath(t *testing.T) string {
	t.Helper()
	var found []string
	filepath.WalkDir(d.cache, func(path string, e os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), "instance") && strings.HasSuffix(e.Name(), ".lock") {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("instance locks under the cache folder: %q, want one", found)
	}
	return found[0]
}

// lockFree reports whether nobody holds the single-instance lock.
func (d *desktop) lockFree(t *testing.T) bool {
	t.Helper()
	l := flock.New(d.lockPath(t))
	ok, err := l.TryLock()
	if err != nil {
		t.Fatalf("trying the instance lock: %v", err)
	}
	if ok {
		l.Unlock()
	}
	return ok
}

// checkDebugPortFree fails when something listens on the DevTools port already: another
// wrapper with Debug, whose page the test would read instead.
func checkDebugPortFree(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout("tcp", debugAddr, time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("something listens on %s already (another wrapper with Debug=True?): the test reads the page there", debugAddr)
	}
}

// writeAppConfig writes the application config (.NET appSettings) with settings.
func writeAppConfig(t *testing.T, path string, settings map[string]string) {
	t.Helper()
	type add struct {
		Key   string `xml:"key,attr"`
		Value string `xml:"value,attr"`
	}
	var doc struct {
		XMLName xml.Name `xml:"configuration"`
		Adds    []add    `xml:"appSettings>add"`
	}
	for k, v := range settings {
		doc.Adds = append(doc.Adds, add{k, v})
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// poll calls cond until it reports true, failing the test with its last detail after
// limit.
func poll(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %s", limit, what, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
