package instance

import "golang.org/x/sys/windows"

// allowSetForegroundWindow is user32's AllowSetForegroundWindow, which x/sys/windows does
// not wrap.
var allowSetForegroundWindow = windows.NewLazySystemDLL("user32.dll").NewProc("AllowSetForegroundWindow")

// allowForegroundWindow lets process pid make a window the foreground window (Windows refuses
// SetForegroundWindow to a program in the background unless the foreground one allows
// it). It reports whether Windows took it; a refusal leaves the window to flash in the
// taskbar instead, so forwarding goes on.
func allowForegroundWindow(pid int) bool {
	ok, _, _ := allowSetForegroundWindow.Call(uintptr(uint32(pid)))
	return ok != 0
}
