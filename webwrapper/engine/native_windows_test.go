package engine

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	procRegisterClassEx = user32.NewProc("RegisterClassExW")
	procCreateWindowEx  = user32.NewProc("CreateWindowExW")
	procDestroyWindow   = user32.NewProc("DestroyWindow")
	procDefWindowProc   = user32.NewProc("DefWindowProcW")
	procIsIconic        = user32.NewProc("IsIconic")
	procGetForeground   = user32.NewProc("GetForegroundWindow")
)

type wndClassEx struct {
	size, style                        uint32
	wndProc                            uintptr
	clsExtra, wndExtra                 int32
	instance, icon, cursor, background uintptr
	menuName, className                *uint16
	iconSm                             uintptr
}

// appWindow makes a top-level window of the browser's app window class in this process,
// as the browser's would be, shown and minimised.
func appWindow(t *testing.T) windows.HWND {
	t.Helper()
	class, _ := syscall.UTF16PtrFromString(appWindowClass)
	wc := wndClassEx{wndProc: procDefWindowProc.Addr(), className: class}
	wc.size = uint32(unsafe.Sizeof(wc))
	procRegisterClassEx.Call(uintptr(unsafe.Pointer(&wc)))
	title, _ := syscall.UTF16PtrFromString("Svc")
	const overlappedWindow = 0x00CF0000
	h, _, err := procCreateWindowEx.Call(0, uintptr(unsafe.Pointer(class)), uintptr(unsafe.Pointer(title)),
		overlappedWindow, 10, 10, 400, 300, 0, 0, 0, 0)
	if h == 0 {
		t.Fatalf("making a window: %v (under Wine the window calls need an X display: test.sh gives them an Xvfb)", err)
	}
	t.Cleanup(func() { procDestroyWindow.Call(h) })
	procShowWindow.Call(h, swShow)
	const swMinimize = 6
	procShowWindow.Call(h, swMinimize)
	return windows.HWND(h)
}

// hide takes the minimised window out of the taskbar (hidden); show puts it back and
// front brings it up as the foreground window, restored by then.
func TestNativeWindow(t *testing.T) {
	// The window is this thread's, and this thread pumps no messages: a call from another
	// thread (the goroutine moved) would wait for it forever. Locked to the end of the test
	// goroutine, the cleanup's DestroyWindow included.
	runtime.LockOSThread()
	h := appWindow(t)
	pid := os.Getpid()
	if got := appWindows(uint32(pid)); len(got) != 1 || got[0] != h {
		t.Fatalf("appWindows = %v, want the app window %v", got, h)
	}
	visible := func() bool { v, _, _ := procIsWindowVisible.Call(uintptr(h)); return v != 0 }
	if err := nativeHide(pid); err != nil || visible() {
		t.Errorf("after nativeHide: %v, visible %v; want hidden", err, visible())
	}
	if err := nativeShow(pid); err != nil || !visible() {
		t.Errorf("after nativeShow: %v, visible %v; want shown", err, visible())
	}
	const swRestore = 9
	procShowWindow.Call(uintptr(h), swRestore) // DevTools restores the window in between
	if err := nativeFront(pid); err != nil {
		t.Errorf("nativeFront = %v", err)
	}
	fg, _, _ := procGetForeground.Call()
	iconic, _, _ := procIsIconic.Call(uintptr(h))
	if windows.HWND(fg) != h || iconic != 0 {
		t.Errorf("after nativeFront the foreground window is %#x (iconic %d), want the app window %#x", fg, iconic, h)
	}
}
