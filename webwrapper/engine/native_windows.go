package engine

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The window as the desktop shows it, beyond what DevTools can set: the browser's
// top-level app windows (class Chrome_WidgetWin_1, with a caption, owned by no other
// window) of its process, handled with user32 as the original handled its own window.

var (
	user32               = windows.NewLazySystemDLL("user32.dll")
	procEnumWindows      = user32.NewProc("EnumWindows")
	procGetClassName     = user32.NewProc("GetClassNameW")
	procGetWindow        = user32.NewProc("GetWindow")
	procGetWindowLong    = user32.NewProc("GetWindowLongW")
	procShowWindow       = user32.NewProc("ShowWindow")
	procIsWindowVisible  = user32.NewProc("IsWindowVisible")
	procSetWindowPos     = user32.NewProc("SetWindowPos")
	procSetForegroundWnd = user32.NewProc("SetForegroundWindow")
)

const (
	appWindowClass = "Chrome_WidgetWin_1"
	gwOwner        = 4
	gwlStyle       = -16
	wsCaption      = 0x00C00000
	swHide         = 0
	swShow         = 5
	hwndTopmost    = ^uintptr(0)     // (HWND)-1
	hwndNoTopmost  = ^uintptr(0) - 1 // (HWND)-2
	swpNoSize      = 0x0001
	swpNoMove      = 0x0002
	swpShowWindow  = 0x0040
)

// nativeHide hides the browser's windows (SW_HIDE): out of the taskbar, as the original's
// hide (minimised, then Hide) did; Minimize has minimised them first.
func nativeHide(pid int) error {
	for _, h := range appWindows(uint32(pid)) {
		procShowWindow.Call(uintptr(h), swHide)
	}
	return nil
}

// nativeShow shows hidden ones again (SW_SHOW), back in the taskbar.
func nativeShow(pid int) error {
	for _, h := range appWindows(uint32(pid)) {
		if v, _, _ := procIsWindowVisible.Call(uintptr(h)); v == 0 {
			procShowWindow.Call(uintptr(h), swShow)
		}
	}
	return nil
}

// nativeFront brings them to the front as the original's Restore did: topmost and back
// (so that the window rises above the program that called, which holds the foreground),
// then the foreground window.
func nativeFront(pid int) error {
	var errs []error
	for _, h := range appWindows(uint32(pid)) {
		procSetWindowPos.Call(uintptr(h), hwndTopmost, 0, 0, 0, 0, swpNoMove|swpNoSize|swpShowWindow)
		procSetWindowPos.Call(uintptr(h), hwndNoTopmost, 0, 0, 0, 0, swpNoMove|swpNoSize|swpShowWindow)
		if ok, _, err := procSetForegroundWnd.Call(uintptr(h)); ok == 0 {
			errs = append(errs, fmt.Errorf("making the window the foreground window: %v", err))
		}
	}
	return errors.Join(errs...)
}

// appWindows are the top-level app windows of process pid.
func appWindows(pid uint32) []windows.HWND {
	var found []windows.HWND
	cb := syscall.NewCallback(func(h windows.HWND, _ uintptr) uintptr {
		var owner uint32
		if _, err := windows.GetWindowThreadProcessId(h, &owner); err != nil || owner != pid {
			return 1
		}
		var class [64]uint16
		n, _, _ := procGetClassName.Call(uintptr(h), uintptr(unsafe.Pointer(&class[0])), uintptr(len(class)))
		if windows.UTF16ToString(class[:n]) != appWindowClass {
			return 1
		}
		if o, _, _ := procGetWindow.Call(uintptr(h), gwOwner); o != 0 {
			return 1
		}
		if style, _, _ := procGetWindowLong.Call(uintptr(h), uintptr(gwlStyle&0xffffffff)); style&wsCaption != wsCaption {
			return 1
		}
		found = append(found, h)
		return 1
	})
	procEnumWindows.Call(cb, 0)
	return found
}
