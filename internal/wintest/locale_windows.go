package wintest

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// getLocaleInfoEx is kernel32's GetLocaleInfoEx; LOCALE_SSHORTDATE asks for the short date
// pattern of the user default locale (a nil name), with the user's own changes.
var getLocaleInfoEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetLocaleInfoEx")

const localeSShortDate = 0x1F

func uintptrOf(buf []uint16) uintptr { return uintptr(unsafe.Pointer(&buf[0])) }
