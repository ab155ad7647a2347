package culture

import (
	"testing"
)

func TestDateOfBirthByCulture(t *testing.T) {
	for _, tt := range []struct {
		locale, value, want string // want "" = refused
	}{
		{"nb_NO.UTF-8", "1950-07-01", "1950-07-01"}, // ISO first, in every culture
		{"nb_NO.UTF-8", "1950-07-01T00:00:00", "1950-07-01"},
		{"nb_NO.UTF-8", "01.07.1950", "1950-07-01"},
		{"nb_NO.UTF-8", "1.7.1950", "1950-07-01"},
		{"nb_NO.UTF-8", "07/01/1950", ""},
		{"en_US.UTF-8", "7/1/1950", "1950-07-01"},
		{"en_US.UTF-8", "07/01/1950", "1950-07-01"},
		{"en_US.UTF-8", "13/01/1950", ""},
		{"en_GB.UTF-8", "01/07/1950", "1950-07-01"},
		{"en_GB.UTF-8", "31/02/1950", ""},
		{"de_DE@euro", "01.07.1950", "1950-07-01"},
		{"de_AT.UTF-8", "01.07.50", ""}, // a two-digit year is ambiguous
		{"sv_SE.UTF-8", "1950-07-01", "1950-07-01"},
		{"sv_SE.UTF-8", "01.07.1950", ""},
		{"da_DK.UTF-8", "01-07-1950", "1950-07-01"},
		{"de", "01.07.1950", "1950-07-01"},
		{"C", "01.07.1950", ""},
		{"C.UTF-8", "1950-07-01", "1950-07-01"},
		{"xx_YY", "01.07.1950", ""},
		{"nb_NO", "", ""},
		{"nb_NO", "01..1950", ""},
		{"nb_NO", "+1.7.1950", ""},
		{"nb_NO", "1950-7-1", ""},
	} {
		got := ""
		if d, err := ParseDate(tt.value, PatternForLocale(tt.locale)); err == nil {
			got = d.Format("2006-01-02")
		}
		if got != tt.want {
			t.Errorf("ParseDate(%q) in %s = %q, want %q", tt.value, tt.locale, got, tt.want)
		}
	}
}

func TestParsePatternWindowsForms(t *testing.T) {
	for _, tt := range []struct{ pattern, value, want string }{
		{"d. M. yyyy", "1. 7. 1950", "1950-07-01"}, // Czech, as Windows writes it
		{"d. M. yyyy", "1.7.1950", "1950-07-01"},
		{"yyyy/MM/dd", "1950/07/01", "1950-07-01"},
		{"dd MM yyyy", "01 07 1950", "1950-07-01"},
		{"yyyy", "1950", ""},
	} {
		got := ""
		if d, err := parsePattern(tt.value, tt.pattern); err == nil {
			got = d.Format("2006-01-02")
		}
		if got != tt.want {
			t.Errorf("parsePattern(%q, %q) = %q, want %q", tt.value, tt.pattern, got, tt.want)
		}
	}
}
