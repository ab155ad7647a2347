package nationalid

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The valid numbers below are synthetic and belong to nobody: every Norwegian, Danish and
// twelve-digit Swedish one has a birth date in the future (2035 to 2050), which no number
// issued yet can have, and the ten-digit Swedish one is 121212-1212, the Swedish Tax
// Agency's well-known test person Tolvan Tolvansson. Invalid numbers are valid ones with
// one thing broken.

// now is the day the tests place ten-digit Swedish numbers from.
var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func TestParseAny(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		country  Country
		digits   string
	}{
		{"Norway, fødselsnummer", "01013550022", Norway, "01013550022"},
		{"Norway, with a space", "170535 50088", Norway, "17053550088"},
		{"Norway, with a hyphen", "170535-50088", Norway, "17053550088"},
		{"Norway, separators around", " 17 05 35 50088 ", Norway, "17053550088"},
		{"Norway, 29 February of a leap year", "29023650078", Norway, "29023650078"},
		{"Norway, D-number (day plus 40)", "41013550016", Norway, "41013550016"},
		{"Norway, D-number on the 31st", "71123950040", Norway, "71123950040"},
		{"Norway, individual 900-999 and year 35: 2035", "01013590083", Norway, "01013590083"},
		{"Sweden, twelve digits", "204002291237", Sweden, "204002291237"},
		{"Sweden, twelve digits with a hyphen", "20400229-1237", Sweden, "204002291237"},
		{"Sweden, samordningsnummer (day plus 60)", "20400161-1237", Sweden, "204001611237"},
		{"Sweden, ten digits, under 100", "121212-1212", Sweden, "201212121212"},
		{"Sweden, ten digits without a separator", "1212121212", Sweden, "201212121212"},
		{"Sweden, ten digits with the plus: 100 or older", "121212+1212", Sweden, "191212121212"},
		{"Sweden, Tolvan in twelve", "19121212-1212", Sweden, "191212121212"},
		{"Denmark, 2050", "010150-5000", Denmark, "0101505000"},
		{"Denmark, without a hyphen", "0101505000", Denmark, "0101505000"},
		{"Denmark, 29 February 2048", "290248-5123", Denmark, "2902485123"},
		{"Denmark, no mod-11 asked", "010150-5001", Denmark, "0101505001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseAny(tt.in, now)
			if err != nil || n.Country() != tt.country || n.Digits() != tt.digits {
				t.Fatalf("ParseAny(%q) = %s %q, %v; want %s %q", tt.in, n.Country(), n.Digits(), err, tt.country, tt.digits)
			}
			if again, err := Parse(tt.country, n.Digits(), now); err != nil || again != n {
				t.Errorf("Parse(%s, %q) = %q, %v; want the normal form again", tt.country, n.Digits(), again.Digits(), err)
			}
		})
	}
}

func TestParseAnyRefuses(t *testing.T) {
	for _, tt := range []struct{ name, in string }{
		{"empty", ""},
		{"placeholder N/A", "N/A"},
		{"placeholder 0", "0"},
		{"eleven zeros", "00000000000"},
		{"ten zeros", "0000000000"},
		{"twelve zeros", "000000000000"},
		{"issue 34's spelling, check digits wrong", "170485 12345"},
		{"Norway, first check digit wrong", "01013550122"},
		{"Norway, second check digit wrong", "01013550023"},
		{"Norway, two digits swapped", "10013550022"},
		{"Norway, 29 February of a common year", "29023750099"},
		{"Norway, H-number (month plus 40)", "01413550005"},
		{"Norway, synthetic test number (month plus 80)", "01813550098"},
		{"Norway, individual 750-899 with year 40-99", "01014575053"},
		{"Sweden, twelve digits, check digit wrong", "204002291238"},
		{"Sweden, 30 February", "20400230-1234"},
		{"Sweden, twelve digits with a plus", "20400229+1237"},
		{"Sweden and Denmark, neither", "321212-1213"},
		{"Sweden, plus in the wrong place", "12121+21212"},
		{"Sweden, two plus signs", "121212++1212"},
		{"Denmark, month 13", "011350-5000"},
		{"Denmark, 29 February 2049", "290249-5123"},
		{"Denmark, day 32", "320150-5000"},
		{"nine digits", "010135500"},
		{"thirteen digits", "0101355002212"},
		{"a letter", "01013550O22"},
		{"a slash", "010135/50022"},
		{"a dot", "010135.50022"},
		{"full-width digits", "０１０１３５５００２２"},
		{"a tab", "010135\t50022"},
		{"a control character", "01013550022\x00"},
		{"too long", "0" + strings.Repeat(" ", 64) + "1013550022"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseAny(tt.in, now)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAny(%q) = %q, %v; want ErrInvalid", tt.in, n.Digits(), err)
			}
			if d := digitsIn(tt.in); len(d) >= 4 && strings.Contains(err.Error(), d) {
				t.Errorf("ParseAny(%q) error %q quotes the number", tt.in, err)
			}
		})
	}
}

// digitsIn is the run of digits in s, as an error could quote them.
func digitsIn(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// TestParse: a number whose country is known (a national eID's) is checked as that
// country's only; the same digits are another country's only when they fit its form.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		country Country
		in      string
		want    string // the normal form; "" for a refusal
	}{
		{Norway, "010135-50022", "01013550022"},
		{Norway, "0101505000", ""},
		{Sweden, "204002291237", "204002291237"},
		{Sweden, "121212-1212", "201212121212"},
		{Sweden, "01013550022", ""},
		{Sweden, "010150-5000", ""}, // a Danish date, not a Swedish number
		{Denmark, "0101505000", "0101505000"},
		{Denmark, "121212-1212", "1212121212"}, // a valid Danish date, as Denmark's eID would give it
		{Denmark, "121212+1212", ""},
		{Denmark, "204002291237", ""},
		{"FI", "010135-50022", ""},
	} {
		n, err := Parse(tt.country, tt.in, now)
		if tt.want == "" {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse(%s, %q) = %q, %v; want ErrInvalid", tt.country, tt.in, n.Digits(), err)
			}
			continue
		}
		if err != nil || n.Digits() != tt.want || n.Country() != tt.country {
			t.Errorf("Parse(%s, %q) = %s %q, %v; want %s %q", tt.country, tt.in, n.Country(), n.Digits(), err, tt.country, tt.want)
		}
	}
}

// TestSwedishCentury: a ten-digit number's year is the latest one ending in its two digits
// that is not after now's, a hundred years earlier with the plus sign.
func TestSwedishCentury(t *testing.T) {
	for _, tt := range []struct {
		now  int
		in   string
		want string
	}{
		{2026, "121212-1212", "201212121212"},
		{2012, "121212-1212", "201212121212"},
		{2011, "121212-1212", "191212121212"},
		{2026, "121212+1212", "191212121212"},
		{2111, "121212+1212", "191212121212"},
		{2113, "121212+1212", "201212121212"},
	} {
		at := time.Date(tt.now, 6, 1, 0, 0, 0, 0, time.UTC)
		if n, err := Parse(Sweden, tt.in, at); err != nil || n.Digits() != tt.want {
			t.Errorf("Parse(SE, %q) in %d = %q, %v; want %q", tt.in, tt.now, n.Digits(), err, tt.want)
		}
	}
}

// TestNumberPrintsNoDigits: a Number formatted by mistake shows its country, not itself.
func TestNumberPrintsNoDigits(t *testing.T) {
	n, err := ParseAny("01013550022", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		if got := fmt.Sprintf(verb, n); strings.Contains(got, "0101") || !strings.Contains(got, "NO") {
			t.Errorf("Sprintf(%s, number) = %s, want the country and no digits", verb, got)
		}
	}
}

// FuzzParseAny: any input is refused or gives a number in its country's normal form, which
// parses again to itself.
func FuzzParseAny(f *testing.F) {
	for _, s := range []string{"01013550022", "170535 50088", "41013550016", "204002291237", "20400161-1237",
		"121212+1212", "1212121212", "010150-5000", "N/A", "", "+", "0000000000", "12121+21212"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseAny(s, now)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAny(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		want := map[Country]int{Norway: 11, Sweden: 12, Denmark: 10}[n.Country()]
		if len(n.Digits()) != want || strings.Trim(n.Digits(), "0123456789") != "" {
			t.Fatalf("ParseAny(%q) = %s %q, not %d digits", s, n.Country(), n.Digits(), want)
		}
		if again, err := Parse(n.Country(), n.Digits(), now); err != nil || again != n {
			t.Fatalf("Parse(%s, %q) = %q, %v; want the number again", n.Country(), n.Digits(), again.Digits(), err)
		}
	})
}

func BenchmarkParseAny(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAny("170535 50088", now); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleParseAny() {
	n, err := ParseAny("20400229-1237", time.Now())
	fmt.Println(n.Country(), n.Digits(), err)
	_, err = ParseAny("N/A", time.Now())
	fmt.Println(err)
	// Output:
	// SE 204002291237 <nil>
	// not a valid national identity number: characters other than digits and separators
}
