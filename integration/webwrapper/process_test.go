package webwrapper

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/webwrapper/pipe"
)

// wrapper is a running wrapper process: the primary instance of its desktop.
type wrapper struct {
	d      *desktop
	cmd    *exec.Cmd
	out    *harness.SyncBuffer
	exited chan struct{}
	err    error // the process's exit, once exited is closed
}

// command is the wrapper started with args in the session, from its install folder.
func (d *desktop) command(args ...string) *exec.Cmd {
	cmd := exec.Command(d.exe, args...)
	cmd.Env = d.env()
	cmd.Dir = d.home
	return cmd
}

// start starts the first wrapper of the session and waits for its pipe.
func (d *desktop) start(t *testing.T, args ...string) *wrapper {
	t.Helper()
	w := &wrapper{d: d, cmd: d.command(args...), out: &harness.SyncBuffer{}, exited: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("starting the wrapper: %v", err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		// A wrapper that a test left running is stopped as a person would close it, then
		// killed; its browser ends with it.
		select {
		case <-w.exited:
		default:
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-w.exited:
			case <-time.After(15 * time.Second):
				_ = w.cmd.Process.Kill()
				<-w.exited
			}
		}
		if t.Failed() {
			t.Logf("wrapper output:\n%s", w.out.String())
		}
		if !d.noDebug {
			waitPortClosed(t)
		}
		if err := harness.RaceReported(w.out.String(), w.cmd.ProcessState.ExitCode()); err != nil {
			t.Error(err)
		}
	})
	poll(t, 60*time.Second, "the wrapper's pipe", func() (bool, string) {
		select {
		case <-w.exited:
			t.Fatalf("the wrapper exited at start: %v\n%s", w.err, w.out.String())
		default:
		}
		_, err := os.Stat(w.pipePath())
		return err == nil, w.out.String()
	})
	return w
}

// pipePath is the wrapper's pipe, svcpipe.<pid> in the session's runtime folder.
func (w *wrapper) pipePath() string {
	return filepath.Join(w.d.runtime, "svcpipe."+strconv.Itoa(w.cmd.Process.Pid))
}

// call sends one pipe command and returns the reply (nil when the wrapper closed without
// one) or fails the test.
func (w *wrapper) call(t *testing.T, method string, args map[string]any) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reply, err := pipe.Call(ctx, w.pipePath(), method, args)
	if err != nil {
		t.Fatalf("pipe %s: %v", method, err)
	}
	if msg, ok := pipe.ReplyError(reply); ok {
		t.Fatalf("pipe %s answered an error: %s", method, msg)
	}
	return reply
}

// callJSON is call decoding a JSON reply into out.
func (w *wrapper) callJSON(t *testing.T, method string, args map[string]any, out any) {
	t.Helper()
	reply := w.call(t, method, args)
	if err := json.Unmarshal(reply, out); err != nil {
		t.Fatalf("pipe %s answered %q: %v", method, reply, err)
	}
}

// svcpipe runs cmd/svcpipe against the wrapper, as an integrator checks a setup, and
// returns its output and exit status.
func (w *wrapper) svcpipe(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(harness.Binary(t, "./cmd/svcpipe"), append([]string{"-path", w.pipePath(), "-timeout", "60s"}, args...)...)
	cmd.Env = w.d.env()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running svcpipe: %v", err)
	}
	return strings.TrimSpace(string(out)), cmd.ProcessState.ExitCode()
}

// waitExit waits for the wrapper to exit and returns its exit status.
func (w *wrapper) waitExit(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-w.exited:
		if !w.d.noDebug {
			waitPortClosed(t)
		}
		return w.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("the wrapper did not exit within %v:\n%s", limit, w.out.String())
		return 0
	}
}

// second starts the wrapper again in the session with args, as a desktop program does
// while the first one runs, and returns its exit status and output once it has exited.
func (d *desktop) second(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := d.command(args...)
	out := &harness.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a second wrapper: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("a second start with %q did not exit within 60s:\n%s", args, out.String())
	}
	if err := harness.RaceReported(out.String(), cmd.ProcessState.ExitCode()); err != nil {
		t.Error(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// waitPortClosed waits until the DevTools port is closed: a wrapper's browser ends with it
// (chromedp kills it with its parent) a moment later, and the next wrapper needs the port.
func waitPortClosed(t *testing.T) {
	t.Helper()
	poll(t, 15*time.Second, "the DevTools port closed after the wrapper", func() (bool, string) {
		c, err := net.DialTimeout("tcp", debugAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil, "something listens on " + debugAddr
	})
}

// checkNoPersonalData asserts that the wrapper's Debug log files (a folder under the
// temporary folder) and its output hold none of values: a person's data never lands
// in them.
func (d *desktop) checkNoPersonalData(t *testing.T, w *wrapper, values ...string) {
	t.Helper()
	logs := map[string]string{"output": w.out.String()}
	filepath.WalkDir(d.tmp, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(e.Name(), ".log") {
			b, _ := os.ReadFile(path)
			logs[path] = string(b)
		}
		return nil
	})
	if len(logs) < 2 {
		t.Errorf("no Debug log file under %s", d.tmp)
	}
	for name, text := range logs {
		for _, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("the wrapper's %s holds the personal value %q", name, v)
			}
		}
	}
}
