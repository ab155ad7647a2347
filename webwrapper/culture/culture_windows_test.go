package culture

import (
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
)

// On Windows the short date pattern comes from GetLocaleInfoEx with the user's own change
// of it in the regional settings (scripts/wine.sh prefix sets sShortDate), as .NET's
// current culture reads it; a date of birth then reads in it.
func TestShortDatePatternFromWindows(t *testing.T) {
	if got := ShortDatePattern(); got != wintest.TestShortDate {
		t.Fatalf("ShortDatePattern() = %q, want the user's sShortDate %q", got, wintest.TestShortDate)
	}
	if d, err := ParseDate("1.7.1950", ShortDatePattern()); err != nil || !d.Equal(time.Date(1950, 7, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ParseDate(1.7.1950) in %s = %v, %v", ShortDatePattern(), d, err)
	}
}
