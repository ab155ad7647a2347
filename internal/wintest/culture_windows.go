package wintest

import (
	"testing"

	"golang.org/x/sys/windows"
)

// TestShortDate is the user's short date format the Windows tests run with: Norwegian, as
// scripts/wine.sh prefix sets it in the user's regional settings (HKCU\Control Panel\
// International, sShortDate), where GetLocaleInfoEx reads the user's own format.
const TestShortDate = "dd.MM.yyyy"

// ShortDate checks that the user's short date format is pattern for the test. A Windows
// program reads its user's regional settings once, at start (so does Wine), so a test
// cannot change them for itself: the Windows tests run with TestShortDate, and a test
// that needs another pattern fails here, naming what to set. locale is for the other
// systems.
func ShortDate(t *testing.T, locale, pattern string) {
	t.Helper()
	buf := make([]uint16, 80)
	n, _, _ := getLocaleInfoEx.Call(0, localeSShortDate, uintptrOf(buf), uintptr(len(buf)))
	got := ""
	if n > 0 {
		got = windows.UTF16ToString(buf[:n])
	}
	if got != pattern {
		t.Fatalf("the user's short date format is %q, this test needs %q: set HKCU\\Control Panel\\International sShortDate (scripts/wine.sh prefix sets %q)",
			got, pattern, TestShortDate)
	}
}
