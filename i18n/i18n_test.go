package i18n

import (
	"regexp"
	"slices"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"nb-NO", "nb", true},
		{"nb", "nb", true},
		{"no", "nb", true},
		{"nn-NO", "nb", true},
		{"sv-SE", "sv", true},
		{"sv-FI", "sv", true},
		{"da-DK", "da", true},
		{"de-AT", "de", true},
		{"de-CH", "de", true},
		{"en-US", "en", true},
		{"en-GB", "en", true},
		{"fr-FR,nb;q=0.8,en;q=0.5", "nb", true},
		{"fr-FR", "", false},
		{"", "", false},
		{"norsk", "", false},
		{"n", "", false},
		{"*", "", false},
	} {
		if got, ok := Match(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("Match(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestChoose(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sources []string
		want    string
	}{
		{"culture first", []string{"nb-NO", "de", "sv-SE,sv;q=0.9"}, "nb"},
		{"saved choice next", []string{"", "de", "sv-SE,sv;q=0.9"}, "de"},
		{"Accept-Language last", []string{"", "", "sv-SE,sv;q=0.9"}, "sv"},
		{"an unknown culture passes", []string{"fr-FR", "", "da"}, "da"},
		{"nothing is English", []string{"", "", "fr-FR"}, "en"},
	} {
		if got := Choose(tt.sources...); got != tt.want {
			t.Errorf("%s: Choose(%q) = %q, want %q", tt.name, tt.sources, got, tt.want)
		}
	}
}

func TestT(t *testing.T) {
	if got, want := T("nb", "signin.title"), "Logg inn"; got != want {
		t.Errorf("T(nb, signin.title) = %q, want %q", got, want)
	}
	if got, want := T("xx", "signin.title"), "Sign in"; got != want {
		t.Errorf("T(xx, signin.title) = %q, want the English %q", got, want)
	}
	if got, want := T("en", "shell.signed_in_as", "account", "Ada", "username", "ada"), "Signed in as Ada (username ada)"; got != want {
		t.Errorf("T(en, shell.signed_in_as, Ada, ada) = %q, want %q", got, want)
	}
	if got := T("de", "no.such.key"); got != "no.such.key" {
		t.Errorf("T(de, no.such.key) = %q, want the key", got)
	}
}

var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

// TestCatalogueComplete: every language has exactly English's keys, none empty, with the
// same placeholders; the test that keys are used is in catalogue_use_test.go.
func TestCatalogueComplete(t *testing.T) {
	en := Keys(Default)
	if len(en) == 0 {
		t.Fatal("English catalogue is empty")
	}
	for _, lang := range Languages[1:] {
		keys := Keys(lang)
		for _, k := range en {
			if _, ok := slices.BinarySearch(keys, k); !ok {
				t.Errorf("%s lacks %q", lang, k)
			}
		}
		for _, k := range keys {
			if _, ok := slices.BinarySearch(en, k); !ok {
				t.Errorf("%s has %q, which English has not", lang, k)
			}
			msg := catalogue[lang][k]
			if msg == "" {
				t.Errorf("%s's %q is empty", lang, k)
			}
			want := placeholder.FindAllString(catalogue[Default][k], -1)
			got := placeholder.FindAllString(msg, -1)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s's %q has placeholders %q, want English's %q", lang, k, got, want)
			}
		}
	}
}

func TestDateTime(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 12, 0, 0, time.UTC)
	pm := time.Date(2026, 11, 27, 21, 5, 0, 0, time.UTC)
	for _, tt := range []struct {
		lang string
		at   time.Time
		want string
	}{
		{"nb", at, "27.11.2026 09:12"},
		{"da", at, "27.11.2026 09.12"},
		{"de", at, "27.11.2026 09:12"},
		{"sv", at, "2026-11-27 09:12"},
		{"en", at, "2026-11-27 09:12"},
		{"en", pm, "2026-11-27 21:05"},
		{"xx", at, "2026-11-27 09:12"},
	} {
		if got := DateTime(tt.lang, tt.at); got != tt.want {
			t.Errorf("DateTime(%q, %v) = %q, want %q", tt.lang, tt.at, got, tt.want)
		}
	}
}

func TestDay(t *testing.T) {
	for _, tt := range []struct{ lang, in, want string }{
		{"nb", "1990-01-31", "31.01.1990"},
		{"de", "1990-01-31", "31.01.1990"},
		{"da", "1990-01-31", "31.01.1990"},
		{"sv", "1990-01-31", "1990-01-31"},
		{"en", "1990-01-31", "1990-01-31"},
		{"nb", "", ""},
		{"nb", "31.01.1990", "31.01.1990"},
	} {
		if got := Day(tt.lang, tt.in); got != tt.want {
			t.Errorf("Day(%q, %q) = %q, want %q", tt.lang, tt.in, got, tt.want)
		}
	}
}
