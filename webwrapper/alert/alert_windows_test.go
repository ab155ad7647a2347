package alert

import (
	"context"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32            = windows.NewLazySystemDLL("user32.dll")
	procEnumWindows   = user32.NewProc("EnumWindows")
	procGetClassName  = user32.NewProc("GetClassNameW")
	procGetWindowText = user32.NewProc("GetWindowTextW")
	procGetDlgItem    = user32.NewProc("GetDlgItem")
	procPostMessage   = user32.NewProc("PostMessageW")
)

const (
	dialogClass = "#32770" // the dialog box class, which MessageBoxW's window has
	textItem    = 0xFFFF   // the id of a message box's text control (Windows and Wine)
	wmCommand   = 0x0111
	idOK        = 1
)

// windowText is a window's text: a caption, or a control's text.
func windowText(h uintptr) string {
	buf := make([]uint16, 4096)
	n, _, _ := procGetWindowText.Call(h, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	return windows.UTF16ToString(buf[:n])
}

// dialogs are the top-level dialog windows of this process.
func dialogs() []uintptr {
	var found []uintptr
	cb := syscall.NewCallback(func(h windows.HWND, _ uintptr) uintptr {
		var pid uint32
		if _, err := windows.GetWindowThreadProcessId(h, &pid); err != nil || pid != windows.GetCurrentProcessId() {
			return 1
		}
		var class [64]uint16
		n, _, _ := procGetClassName.Call(uintptr(h), uintptr(unsafe.Pointer(&class[0])), uintptr(len(class)))
		if windows.UTF16ToString(class[:n]) == dialogClass {
			found = append(found, uintptr(h))
		}
		return 1
	})
	procEnumWindows.Call(cb, 0)
	return found
}

// Show puts up a message box, as a person sees it: found from outside among the
// process's windows, with the title and the whole text (Norwegian letters and the line
// breaks included); it waits until the person presses OK. Under
// Wine, on test.sh's Xvfb.
func TestShowMessageBox(t *testing.T) {
	m := Message{Title: "Svc Webwrapper", Text: "Svc Webwrapper kan ikke starte.\n\nDetaljer: ingen nettleser – æøå"}
	done := make(chan error, 1)
	go func() { done <- Show(context.Background(), m) }()

	var box uintptr
	deadline := time.Now().Add(30 * time.Second)
	for box == 0 {
		select {
		case err := <-done:
			t.Fatalf("Show returned %v before anyone pressed OK (under Wine the box needs an X display: test.sh gives one)", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no message box within 30 s")
		}
		if d := dialogs(); len(d) > 0 {
			box = d[0]
		} else {
			time.Sleep(50 * time.Millisecond) // polling the desktop, which has no event for it here
		}
	}
	if got := windowText(box); got != m.Title {
		t.Errorf("the box's title = %q, want %q", got, m.Title)
	}
	text, _, _ := procGetDlgItem.Call(box, textItem)
	if got := windowText(text); got != m.Text {
		t.Errorf("the box's text = %q, want %q", got, m.Text)
	}
	select {
	case err := <-done:
		t.Fatalf("Show returned %v while the box is open", err)
	default:
	}
	procPostMessage.Call(box, wmCommand, idOK, 0) // the person presses OK
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Show = %v after OK", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Show did not return within 30 s of OK")
	}
}
