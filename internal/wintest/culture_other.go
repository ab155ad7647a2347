//go:build !windows

package wintest

import "testing"

// ShortDate makes the user's short date format that of locale (a POSIX name such as
// nb_NO.UTF-8), whose .NET pattern is pattern, for the test: through the locale
// environment here, through the user's regional settings on Windows.
func ShortDate(t *testing.T, locale, pattern string) {
	t.Setenv("LC_ALL", locale)
}
