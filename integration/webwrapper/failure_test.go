package webwrapper

import (
	"bufio"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/webwrapper/provider"
)

// notifications gives the session what a desktop has for notifications: a session bus of
// its own (dbus-daemon) and a notification daemon, dunst, showing them on the session's
// display. The wrapper finds the bus by DBUS_SESSION_BUS_ADDRESS only: its socket is not
// $XDG_RUNTIME_DIR/bus, where a program finds a systemd user session's bus.
func (d *desktop) notifications(t *testing.T) {
	t.Helper()
	if pkgs := missing(map[string]string{"dbus-daemon": "dbus", "dunst": "dunst", "dunstctl": "dunst"}); len(pkgs) > 0 {
		t.Fatalf("the wrapper's notifications test needs a session bus and a notification daemon: apt-get install -y %s (scripts/test-deps.sh does)", strings.Join(pkgs, " "))
	}
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile",
		"--address=unix:path="+filepath.Join(filepath.Dir(d.home), "session-bus"), "--print-address=1")
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { _ = bus.Process.Kill(); _ = bus.Wait() })
	addr := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(s)
	}()
	select {
	case d.bus = <-addr:
	case <-time.After(20 * time.Second):
		t.Fatal("dbus-daemon gave no address within 20s")
	}
	dunst := exec.Command("dunst")
	dunst.Env = d.env()
	var log harness.SyncBuffer
	dunst.Stdout, dunst.Stderr = &log, &log
	if err := dunst.Start(); err != nil {
		t.Fatalf("starting dunst: %v", err)
	}
	t.Cleanup(func() { _ = dunst.Process.Kill(); _ = dunst.Wait() })
	poll(t, 20*time.Second, "dunst on the session bus", func() (bool, string) {
		out, err := d.dunstctl("count", "displayed")
		return err == nil, out + log.String()
	})
}

func (d *desktop) dunstctl(args ...string) (string, error) {
	cmd := exec.Command("dunstctl", args...)
	cmd.Env = append(d.env(), "PATH="+os.Getenv("PATH")) // dunstctl runs dbus-send, whatever the session's PATH
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// notification is one that the desktop showed: the program's name, the summary and the
// body as the person reads it (the markup's entities read), and its timeout (0: it stays).
type notification struct {
	App, Summary, Body string
	Timeout            int64
}

// shown waits until the desktop shows n notifications, closes them as the person would,
// and returns them as dunst's history holds them, newest first (those read before left
// out).
func (d *desktop) shown(t *testing.T, n int) []notification {
	t.Helper()
	poll(t, 30*time.Second, "the notifications shown", func() (bool, string) {
		out, err := d.dunstctl("count", "displayed")
		return err == nil && strings.TrimSpace(out) == strconv.Itoa(n), "displayed: " + out
	})
	if out, err := d.dunstctl("close-all"); err != nil {
		t.Fatalf("dunstctl close-all: %v\n%s", err, out)
	}
	out, err := d.dunstctl("history")
	if err != nil {
		t.Fatalf("dunstctl history: %v\n%s", err, out)
	}
	type field[T any] struct{ Data T }
	var h struct {
		Data [][]struct {
			Appname, Summary, Body field[string]
			Timeout, ID            field[int64]
		}
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Data) != 1 {
		t.Fatalf("dunstctl history: %v\n%s", err, out)
	}
	var got []notification
	newest := d.lastID
	for _, e := range h.Data[0] {
		if e.ID.Data <= d.lastID {
			continue // read before: dunst keeps its history
		}
		newest = max(newest, e.ID.Data)
		got = append(got, notification{App: e.Appname.Data, Summary: e.Summary.Data, Body: html.UnescapeString(e.Body.Data), Timeout: e.Timeout.Data})
	}
	d.lastID = newest
	if len(got) != n {
		t.Fatalf("the desktop showed %d notifications, want %d: %+v", len(got), n, got)
	}
	return got
}

// run starts the wrapper in the session with args and returns its exit status once it
// has exited, and its output.
func (d *desktop) run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := d.command(args...)
	out := &harness.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the wrapper with %q did not exit within 60s:\n%s", args, out.String())
	}
	if err := harness.RaceReported(out.String(), cmd.ProcessState.ExitCode()); err != nil {
		t.Error(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestFailuresShown: the wrapper that cannot start tells the person on the desktop, in a
// notification that stays until closed, what to do, in the start's culture or else the
// Culture setting: without a browser, to install one; with an unknown provider, to
// correct the name and where. The Log setting writes the log file in the folder under
// the temporary folder that docs/webwrapper.md names, and the notification says where.
// Without a session bus the wrapper still exits with its status and logs why nobody was
// told.
func TestFailuresShown(t *testing.T) {
	d := newDesktop(t, nil, map[string]string{"Debug": "False", "Log": "True", "Culture": "sv-SE"})
	d.noDebug = true // no DevTools port: this test may run beside another wrapper's
	d.notifications(t)
	d.path = t.TempDir() // no browser on PATH: Debian's chromium is found there only

	code, out := d.run(t, "culture=nb-NO")
	if code != 1 {
		t.Fatalf("the wrapper without a browser exited %d, want 1:\n%s", code, out)
	}
	logDir := filepath.Join(d.tmp, "Svc Webwrapper logs")
	n := d.shown(t, 1)[0]
	want := i18n.T("nb", "webwrapper.alert.no_browser", "browsers", "Chromium, Google Chrome, Microsoft Edge")
	if n.App != "Svc Webwrapper" || n.Summary != "Svc Webwrapper" || n.Timeout != 0 || !strings.HasPrefix(n.Body, want+"\n\n") {
		t.Errorf("the desktop showed %+v\nwant Svc Webwrapper's, staying, in the start's culture (nb-NO) first:\n%s", n, want)
	}
	if tail := i18n.T("nb", "webwrapper.alert.log", "folder", logDir); !strings.HasSuffix(n.Body, tail) {
		t.Errorf("the notification's body\n%s\nwant it to end with where the log is: %s", n.Body, tail)
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "webwrapper-*.log"))
	if len(logs) != 1 {
		t.Fatalf("log files in %s: %v, want one (Log=True)", logDir, logs)
	}
	if b, err := os.ReadFile(logs[0]); err != nil || !strings.Contains(string(b), "cannot start") {
		t.Errorf("the log file %s: %v\n%s\nwant the failure to start", logs[0], err, b)
	}

	code, out = d.run(t, "provider=Nope.Component, Nope")
	if code != 2 {
		t.Fatalf("the wrapper with an unknown provider exited %d, want 2:\n%s", code, out)
	}
	n = d.shown(t, 1)[0]
	if want := i18n.T("sv", "webwrapper.alert.unknown_provider", "config", d.exe+".config"); !strings.HasPrefix(n.Body, want) ||
		!strings.Contains(n.Body, provider.XML) || !strings.Contains(n.Body, provider.Arguments) {
		t.Errorf("the desktop showed\n%s\nwant the Swedish text (the Culture setting) naming %s, and the known providers:\n%s", n.Body, d.exe+".config", want)
	}

	d.bus = "" // a desktop without a session bus
	if code, out = d.run(t); code != 1 || !strings.Contains(out, "telling the user") {
		t.Errorf("without a session bus the wrapper exited %d, want 1, and said why nobody was told:\n%s", code, out)
	}
}
