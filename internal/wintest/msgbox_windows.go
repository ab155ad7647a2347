package wintest

import (
	"syscall"
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
	procIsVisible     = user32.NewProc("IsWindowVisible")
)

const (
	dialogClass = "#32770" // the dialog box class, which MessageBoxW's window has
	textItem    = 0xFFFF   // the id of a message box's text control (Windows and Wine)
	wmCommand   = 0x0111
	idOK        = 1
)

// MessageBox is a message box on the desktop, as a person sees it, found from outside.
type MessageBox uintptr

// FindMessageBox returns the top-level message box (a dialog window) of process pid that
// a person sees, 0 when it has none (yet: a test polls, the desktop has no event for it
// here). A box is shown once its dialog has set its caption and text (WM_INITDIALOG):
// the dialog window exists before, empty, and a box read then said nothing (the Wine step
// failed so once).
func FindMessageBox(pid uint32) MessageBox {
	var found MessageBox
	cb := syscall.NewCallback(func(h windows.HWND, _ uintptr) uintptr {
		var owner uint32
		if _, err := windows.GetWindowThreadProcessId(h, &owner); err != nil || owner != pid {
			return 1
		}
		var class [64]uint16
		n, _, _ := procGetClassName.Call(uintptr(h), uintptr(unsafe.Pointer(&class[0])), uintptr(len(class)))
		if windows.UTF16ToString(class[:n]) == dialogClass && visible(uintptr(h)) {
			found = MessageBox(h)
			return 0
		}
		return 1
	})
	procEnumWindows.Call(cb, 0)
	return found
}

// Title is the box's caption.
func (b MessageBox) Title() string { return windowText(uintptr(b)) }

// Text is the box's message, line breaks included.
func (b MessageBox) Text() string {
	text, _, _ := procGetDlgItem.Call(uintptr(b), textItem)
	return windowText(text)
}

// PressOK presses the box's OK, as the person would.
func (b MessageBox) PressOK() { procPostMessage.Call(uintptr(b), wmCommand, idOK, 0) }

// visible reports whether window h is shown (WS_VISIBLE on it and its parents).
func visible(h uintptr) bool {
	shown, _, _ := procIsVisible.Call(h)
	return shown != 0
}

// windowText is a window's text: a caption, or a control's text.
func windowText(h uintptr) string {
	buf := make([]uint16, 4096)
	n, _, _ := procGetWindowText.Call(h, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	return windows.UTF16ToString(buf[:n])
}
