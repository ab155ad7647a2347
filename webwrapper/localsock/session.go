package localsock

import "strings"

// fileSafe keeps s usable in a file name: letters, digits, '.', '_' and '-' stay, every
// other character becomes '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
