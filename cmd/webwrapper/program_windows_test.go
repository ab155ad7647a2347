package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/wintest"
)

// The program that finds no browser shows a message box, as a person sees it: found
// among its windows from outside, in the start's culture (Norwegian), saying to install
// Edge or Chrome; it waits until OK is pressed, then exits 1. Under Wine, on test.sh's
// Xvfb (Wine has no Edge or Chrome).
func TestNoBrowserMessageBox(t *testing.T) {
	home := wintest.TempDir(t)
	empty := wintest.TempDir(t)
	cmd := exec.Command(os.Args[0], "culture=nb-NO")
	cmd.Env = append(os.Environ(), programEnv+"=1",
		"LOCALAPPDATA="+filepath.Join(home, "local"), "APPDATA="+filepath.Join(home, "roaming"),
		"PATH="+empty, "ProgramFiles="+empty, "ProgramFiles(x86)="+empty)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var box wintest.MessageBox
	for deadline := time.Now().Add(60 * time.Second); box == 0; {
		select {
		case err := <-exited:
			t.Fatalf("the program exited (%v) without a message box (under Wine it needs an X display: test.sh gives one):\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no message box within 60 s:\n%s", out.String())
		}
		if box = wintest.FindMessageBox(uint32(cmd.Process.Pid)); box == 0 {
			time.Sleep(50 * time.Millisecond) // polling the desktop, which has no event for it here
		}
	}
	if got := box.Title(); got != "Svc Webwrapper" {
		t.Errorf("the box's title = %q, want Svc Webwrapper", got)
	}
	want := i18n.T("nb", "webwrapper.alert.no_browser", "browsers", "Microsoft Edge, Google Chrome")
	if got := box.Text(); !strings.HasPrefix(got, want) {
		t.Errorf("the box says\n%s\nwant first\n%s", got, want)
	}
	box.PressOK()
	select {
	case err := <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("after OK the program exited %d (%v), want 1:\n%s", code, err, out.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the program did not exit within 60 s of OK:\n%s", out.String())
	}
}
