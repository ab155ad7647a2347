package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/wintest"
)

var (
	user32            = windows.NewLazySystemDLL("user32.dll")
	procEnumWindows   = user32.NewProc("EnumWindows")
	procGetClassName  = user32.NewProc("GetClassNameW")
	procGetWindowText = user32.NewProc("GetWindowTextW")
	procGetDlgItem    = user32.NewProc("GetDlgItem")
	procPostMessage   = user32.NewProc("PostMessageW")
)

func windowText(h uintptr) string {
	buf := make([]uint16, 4096)
	n, _, _ := procGetWindowText.Call(h, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	return windows.UTF16ToString(buf[:n])
}

// dialogOf is a top-level dialog window (a message box's class, #32770) of process pid, 0
// for none.
func dialogOf(pid int) uintptr {
	var found uintptr
	cb := syscall.NewCallback(func(h windows.HWND, _ uintptr) uintptr {
		var owner uint32
		if _, err := windows.GetWindowThreadProcessId(h, &owner); err != nil || owner != uint32(pid) {
			return 1
		}
		var class [64]uint16
		n, _, _ := procGetClassName.Call(uintptr(h), uintptr(unsafe.Pointer(&class[0])), uintptr(len(class)))
		if windows.UTF16ToString(class[:n]) == "#32770" {
			found = uintptr(h)
			return 0
		}
		return 1
	})
	procEnumWindows.Call(cb, 0)
	return found
}

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
	var box uintptr
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
		if box = dialogOf(cmd.Process.Pid); box == 0 {
			time.Sleep(50 * time.Millisecond) // polling the desktop, which has no event for it here
		}
	}
	if got := windowText(box); got != "Svc Webwrapper" {
		t.Errorf("the box's title = %q, want Svc Webwrapper", got)
	}
	text, _, _ := procGetDlgItem.Call(box, 0xFFFF)
	want := i18n.T("nb", "webwrapper.alert.no_browser", "browsers", "Microsoft Edge, Google Chrome")
	if got := windowText(text); !strings.HasPrefix(got, want) {
		t.Errorf("the box says\n%s\nwant first\n%s", got, want)
	}
	const wmCommand, idOK = 0x0111, 1
	procPostMessage.Call(box, wmCommand, idOK, 0)
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
