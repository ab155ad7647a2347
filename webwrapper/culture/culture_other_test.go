//go:build !windows

package culture

import "testing"

func TestShortDatePatternFromEnvironment(t *testing.T) {
	for _, tt := range []struct{ all, time, lang, want string }{
		{"", "", "en_US.UTF-8", "M/d/yyyy"},
		{"", "nb_NO.UTF-8", "en_US.UTF-8", "dd.MM.yyyy"},
		{"en_GB.UTF-8", "nb_NO.UTF-8", "en_US.UTF-8", "dd/MM/yyyy"},
		{"", "", "", ""},
	} {
		t.Setenv("LC_ALL", tt.all)
		t.Setenv("LC_TIME", tt.time)
		t.Setenv("LANG", tt.lang)
		if got := ShortDatePattern(); got != tt.want {
			t.Errorf("ShortDatePattern() with LC_ALL=%q LC_TIME=%q LANG=%q = %q, want %q", tt.all, tt.time, tt.lang, got, tt.want)
		}
	}
}
