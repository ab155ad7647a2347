package culture

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// getLocaleInfoEx is kernel32's GetLocaleInfoEx, which golang.org/x/sys/windows does not wrap.
var getLocaleInfoEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetLocaleInfoEx")

// localeSShortDate is LOCALE_SSHORTDATE: the short date pattern, in .NET notation.
const localeSShortDate = 0x1F

// ShortDatePattern gives the user's short date pattern from the operating system (the
// user default locale, with the user's own changes), as .NET's current culture does.
// "" when the call fails: dates are then read as ISO 8601 only.
func ShortDatePattern() string {
	buf := make([]uint16, 80)
	// A nil locale name is LOCALE_NAME_USER_DEFAULT.
	n, _, _ := getLocaleInfoEx.Call(0, localeSShortDate, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if n == 0 {
		return ""
	}
	return windows.UTF16ToString(buf[:n])
}
