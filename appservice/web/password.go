package web

import (
	_ "embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// The password rules of an account created on the first-sight page, after NIST SP 800-63B
// §5.1.1.2 (memorized secrets): a length, no blocklisted value (common passwords, repetitive
// or sequential characters, the context's own words, here the username), and no other
// composition rule. The page says each rule (templates/signin.html).
const (
	minPassword = 12   // characters
	maxPassword = 1024 // bytes: the hash's input stays small
)

// commonPasswordList is John the Ripper's password.lst (Openwall, revision of 2011-11-20,
// 3,546 entries, the commonest first), as Debian's john-data 1.9.0-2 ships it, unchanged:
// its own header says it "is assumed to be in the public domain". Most of its entries are
// shorter than minPassword, which is why a password is also compared with its core, the
// password less the digits, punctuation and spaces around it: password1234, !!Sunshine2024!!.
//
//go:embed common-passwords.txt
var commonPasswordList string

// commonPasswords is the list case-folded into a set, made on first use.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, 3600)
	fold := cases.Fold()
	for line := range strings.Lines(commonPasswordList) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#!comment") {
			continue
		}
		set[fold.String(line)] = struct{}{}
	}
	return set
})

// PasswordProblem returns what the form says about a password that breaks a rule, or "".
// username is the account's username as the form sent it. The app service checks the
// first instructor's configured password with it too.
func PasswordProblem(password, username string) string {
	if utf8.RuneCountInString(password) < minPassword {
		return "The password must have at least 12 characters."
	}
	if len(password) > maxPassword {
		return "The password must have at most 1024 bytes."
	}
	// Case-folded both (cases.Fold is per call: a Caser is not safe for concurrent use).
	fold := cases.Fold()
	folded := fold.String(password)
	if u := fold.String(strings.TrimSpace(username)); u != "" && strings.Contains(folded, u) {
		return "The password must not be your username or contain it."
	}
	if repeatsPiece(folded) {
		return "The password must not repeat a short piece, such as aaaa or abcabc."
	}
	if isSequence(folded) {
		return "The password must not be a sequence, such as abcdef or 123456."
	}
	list := commonPasswords()
	_, common := list[folded]
	if !common {
		core := strings.TrimFunc(folded, func(r rune) bool {
			return unicode.IsDigit(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsSpace(r)
		})
		_, common = list[core]
	}
	if common {
		return "This is one of the commonest passwords (or one with digits or symbols added), which are tried first: choose another."
	}
	return ""
}

// repeatsPiece reports whether s is a piece shorter than minPassword written twice or
// more (aaaaaaaaaaaa, abc1abc1abc1): such a password is as strong as its piece.
func repeatsPiece(s string) bool {
	r := []rune(s)
	for n := 1; n < minPassword && 2*n <= len(r); n++ {
		if len(r)%n != 0 {
			continue
		}
		if strings.Repeat(string(r[:n]), len(r)/n) == s {
			return true
		}
	}
	return false
}

// isSequence reports whether every character of s follows the one before it by one
// step, all up or all down: abcdefghijkl, zyxwvutsrqpo; digits count round, so
// 123456789012 is one.
func isSequence(s string) bool {
	r := []rune(s)
	step := func(a, b rune) int {
		if isASCIIDigit(a) && isASCIIDigit(b) {
			switch (b - a + 10) % 10 {
			case 1:
				return 1
			case 9:
				return -1
			}
			return 0
		}
		switch b - a {
		case 1:
			return 1
		case -1:
			return -1
		}
		return 0
	}
	dir := step(r[0], r[1])
	if dir == 0 {
		return false
	}
	for i := 2; i < len(r); i++ {
		if step(r[i-1], r[i]) != dir {
			return false
		}
	}
	return true
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }
