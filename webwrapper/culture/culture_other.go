//go:build !windows

package culture

import "os"

// ShortDatePattern gives the user's short date pattern from the locale environment, in
// the order of precedence of setlocale(LC_TIME): LC_ALL, LC_TIME, LANG.
func ShortDatePattern() string {
	for _, v := range []string{"LC_ALL", "LC_TIME", "LANG"} {
		if s := os.Getenv(v); s != "" {
			return PatternForLocale(s)
		}
	}
	return ""
}
