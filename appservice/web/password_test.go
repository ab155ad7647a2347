package web

import (
	"strings"
	"testing"
)

// TestPasswordProblem: the password rules on their own, with the passwords they must let
// through: a common word inside a longer passphrase is no common password.
func TestPasswordProblem(t *testing.T) {
	for _, tt := range []struct {
		password, username, want string // want: a substring of the problem, "" for none
	}{
		{"correct horse battery", "ida.b", ""},
		{"purple monkey dishwasher", "ida.b", ""},
		{"Tr0ub4dor&3-staple", "ida.b", ""},
		{"2024-blue-kettle-17", "ida.b", ""},
		{"abcdefghijkX", "ida.b", ""},
		{"aaaaaaaaaaab", "ida.b", ""},
		{"short", "ida.b", "at least 12 characters"},
		{strings.Repeat("x", 1025), "ida.b", "at most 1024 bytes"},
		{"aaaaaaaaaaaa", "ida.b", "repeat a short piece"},
		{"Passwordpassword", "ida.b", "repeat a short piece"},
		{"ÄäÄäÄäÄäÄäÄä", "ida.b", "repeat a short piece"},
		{"abcdefghijkl", "ida.b", "sequence"},
		{"9876543210987", "ida.b", "sequence"},
		{"password1234", "ida.b", "commonest passwords"},
		{"1234password", "ida.b", "commonest passwords"},
		{"  iloveyou!!!", "ida.b", "commonest passwords"},
		{"WinnieThePooh", "ida.b", "commonest passwords"},
		{"the ida.b account", "IDA.B", "username"},
		{"STRASSE-kari-1234", "straße", "username"},
	} {
		got := PasswordProblem(tt.password, tt.username)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("PasswordProblem(%q, %q) = %q, want %q", tt.password, tt.username, got, tt.want)
		}
	}
}

// TestCommonPasswordsList: the embedded list loaded, folded and whole (the Openwall list of
// 2011 has 3,546 entries, 3,410 once case is folded).
func TestCommonPasswordsList(t *testing.T) {
	list := commonPasswords()
	if n := len(list); n != 3410 {
		t.Errorf("common passwords = %d, want 3410", n)
	}
	for _, p := range []string{"123456", "password", "winniethepooh", "qwertyuiop"} {
		if _, ok := list[p]; !ok {
			t.Errorf("common passwords lack %q", p)
		}
	}
	for p := range list {
		if p == "" || strings.HasPrefix(p, "#!comment") {
			t.Errorf("common passwords hold %q", p)
		}
	}
}
