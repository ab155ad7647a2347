//go:build !windows

package alert

import (
	"os"
	"strings"
)

// Language is the language of the person's desktop, as a BCP 47 tag ("nb-NO"): the first
// of LANGUAGE's list, then the messages' locale in the order of setlocale(LC_MESSAGES),
// LC_ALL, LC_MESSAGES, LANG; "" for none, C and POSIX.
func Language() string {
	if l, _, _ := strings.Cut(os.Getenv("LANGUAGE"), ":"); l != "" {
		return tag(l)
	}
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if s := os.Getenv(v); s != "" {
			return tag(s)
		}
	}
	return ""
}

// tag is a POSIX locale name (nb_NO.UTF-8, de_DE@euro) as a BCP 47 tag.
func tag(locale string) string {
	locale, _, _ = strings.Cut(locale, ".")
	locale, _, _ = strings.Cut(locale, "@")
	if locale == "C" || locale == "POSIX" {
		return ""
	}
	return strings.ReplaceAll(locale, "_", "-")
}
