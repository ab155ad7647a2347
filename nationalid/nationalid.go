// Package nationalid checks the national identity numbers of Norway, Sweden and Denmark by
// their form and writes each in its country's normal form: Norway's fødselsnummer and
// D-number with both mod-11 check digits (11 digits), Sweden's personnummer and
// samordningsnummer with the Luhn check digit (12 digits, the century written out), and
// Denmark's CPR number with a valid date (10 digits; CPR numbers issued since 2007 need not
// pass mod-11, so none is asked for).
//
// A number is checked by its form alone, never looked up: a valid number may belong to
// nobody, and a birth date in the future is not refused. What the checks stop is what is
// not a number at all: "N/A", "0", "00000000000", a number with a wrong digit. Hand-typed
// and placeholder values must not match one person to another.
//
// The package is standard library only, so that every part may use it: the link's payload
// rules (linkspec), the app service's matching of contacts, and the normalising of the
// number a national electronic ID gives (Parse with its country).
package nationalid

import (
	"errors"
	"time"
)

// Country is a country whose numbers the package checks, by its ISO 3166-1 alpha-2 code.
type Country string

// The countries.
const (
	Norway  Country = "NO"
	Sweden  Country = "SE"
	Denmark Country = "DK"
)

// ErrInvalid is the error of every number that fails its check. The errors carry a reason,
// never the number.
var ErrInvalid = errors.New("not a valid national identity number")

// invalid is ErrInvalid with a reason.
type invalid struct {
	country Country // "" when the country is not known
	reason  string
}

func (e *invalid) Error() string {
	if e.country == "" {
		return ErrInvalid.Error() + ": " + e.reason
	}
	return ErrInvalid.Error() + " of " + string(e.country) + ": " + e.reason
}

func (e *invalid) Is(target error) bool { return target == ErrInvalid }

// Number is a checked national identity number in its country's normal form: Norway 11
// digits, Sweden 12, Denmark 10, without separators. It prints as its country only
// (String, GoString): a number formatted into a log line by mistake does not reach it.
type Number struct {
	country Country
	digits  string
}

// Country is the number's country.
func (n Number) Country() Country { return n.country }

// Digits is the number in its country's normal form.
func (n Number) Digits() string { return n.digits }

// String names the number's country, not the number.
func (n Number) String() string { return "national identity number (" + string(n.country) + ")" }

// GoString is String, so that %#v does not print the digits either.
func (n Number) GoString() string { return n.String() }

// Parse checks s as a number of country and returns it in the country's normal form: the
// number a national electronic ID gives, or any whose country is known. Spaces and hyphens
// are separators; Sweden's ten-digit form may have a plus sign before its last four digits
// (a person of 100 years or more). now places a ten-digit Swedish number's year in its
// century, as the Swedish Tax Agency does: the latest year ending in those two digits that
// is not after now's, a hundred years earlier with the plus sign.
func Parse(country Country, s string, now time.Time) (Number, error) {
	w, bad := read(s)
	if bad != "" {
		return Number{}, &invalid{country: country, reason: bad}
	}
	switch country {
	case Norway:
		return parseNorway(w)
	case Sweden:
		return parseSweden(w, now)
	case Denmark:
		return parseDenmark(w)
	}
	return Number{}, &invalid{country: country, reason: "a country whose numbers are not checked"}
}

// ParseAny checks s as a number of whichever country its form fits, for a number whose
// country nobody names (a partner's link): 11 digits are Norwegian, 12 Swedish, 10 Swedish
// when written with the plus sign. Ten digits without it may be either a Swedish or a
// Danish number; such a number is Swedish when its Luhn digit and date hold as Swedish
// (a Danish number passes that by chance once in ten, and Swedish numbers of people born
// since 2001 are all valid Danish dates), else Danish when its date holds as Danish.
func ParseAny(s string, now time.Time) (Number, error) {
	w, bad := read(s)
	if bad != "" {
		return Number{}, &invalid{reason: bad}
	}
	switch w.n {
	case 11:
		return parseNorway(w)
	case 12:
		return parseSweden(w, now)
	case 10:
		n, err := parseSweden(w, now)
		if err == nil || w.plus {
			return n, err
		}
		if n, err := parseDenmark(w); err == nil {
			return n, nil
		}
		return Number{}, &invalid{reason: "neither a Swedish nor a Danish number"}
	}
	return Number{}, &invalid{reason: "not 10, 11 or 12 digits"}
}

// written is a number as written: its digits, and whether a plus sign stood before the
// last four. An array, so that reading a number allocates nothing: the link's payload
// rules check every link's number on the gateway's path.
type written struct {
	d    [12]byte
	n    int
	plus bool
}

// maxWritten bounds what read looks at: more than the longest normal form with a
// separator between every two digits.
const maxWritten = 64

// read takes the digits of s, which may be separated by spaces and hyphens, and at most
// one plus sign before the last four digits of ten; or says why it cannot.
func read(s string) (w written, bad string) {
	if len(s) > maxWritten {
		return written{}, "too long"
	}
	plusAt := -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if w.n == len(w.d) {
				return written{}, "more than 12 digits"
			}
			w.d[w.n] = c
			w.n++
		case c == ' ' || c == '-':
		case c == '+' && plusAt < 0:
			plusAt = w.n
		default:
			return written{}, "characters other than digits and separators"
		}
	}
	if plusAt >= 0 && (w.n != 10 || plusAt != 6) {
		return written{}, "a plus sign elsewhere than before the last four digits of a ten-digit number"
	}
	w.plus = plusAt >= 0
	return w, ""
}

// parseNorway checks a fødselsnummer or D-number: DDMMYY (a D-number adds 4 to the first
// digit), three digits of individual number that give the century, and two mod-11 check
// digits. Month numbers with 40 or 80 added (H-numbers, which health institutions give
// locally, and the tax administration's synthetic test numbers) are not national numbers
// and fail.
func parseNorway(w written) (Number, error) {
	d := w.d[:w.n]
	if len(d) != 11 || w.plus {
		return Number{}, &invalid{country: Norway, reason: "not 11 digits"}
	}
	if !checkDigit(d[:9], d[9], 3, 7, 6, 1, 8, 9, 4, 5, 2) || !checkDigit(d[:10], d[10], 5, 4, 3, 2, 7, 6, 5, 4, 3, 2) {
		return Number{}, &invalid{country: Norway, reason: "check digit"}
	}
	day, month, yy, individual := num(d[0:2]), num(d[2:4]), num(d[4:6]), num(d[6:9])
	if day > 40 {
		day -= 40 // D-number
	}
	var century int
	switch {
	case individual < 500:
		century = 1900
	case individual < 750 && yy >= 54:
		century = 1800
	case yy <= 39:
		century = 2000
	case individual >= 900:
		century = 1900
	default:
		return Number{}, &invalid{country: Norway, reason: "individual number and year of no century"}
	}
	if !validDate(century+yy, month, day) {
		return Number{}, &invalid{country: Norway, reason: "date"}
	}
	return Number{country: Norway, digits: string(d)}, nil
}

// checkDigit reports whether c is the mod-11 check digit of digits under weights, one per
// digit.
func checkDigit(digits []byte, c byte, weights ...int) bool {
	sum := 0
	for i, x := range digits {
		sum += int(x-'0') * weights[i]
	}
	k := (11 - sum%11) % 11
	return k < 10 && byte('0'+k) == c
}

// parseSweden checks a personnummer or samordningsnummer (the day plus 60): [YY]YYMMDD,
// three digits of birth number and a Luhn check digit over the last ten digits.
func parseSweden(w written, now time.Time) (Number, error) {
	var year int
	var d []byte // the last ten digits
	switch {
	case w.n == 12 && !w.plus:
		year, d = num(w.d[:4]), w.d[2:12]
	case w.n == 10:
		// The latest year ending in YY that is not after now's; a hundred years earlier with
		// the plus sign.
		yy, this := num(w.d[:2]), now.Year()
		year, d = this-((this%100-yy)%100+100)%100, w.d[:10]
		if w.plus {
			year -= 100
		}
	default:
		return Number{}, &invalid{country: Sweden, reason: "not 10 or 12 digits, or a plus sign in the twelve-digit form"}
	}
	if !luhn(d) {
		return Number{}, &invalid{country: Sweden, reason: "check digit"}
	}
	day := num(d[4:6])
	if day > 60 {
		day -= 60 // samordningsnummer
	}
	if year < 1800 || !validDate(year, num(d[2:4]), day) {
		return Number{}, &invalid{country: Sweden, reason: "date"}
	}
	var out [12]byte
	out[0], out[1] = byte('0'+year/1000%10), byte('0'+year/100%10)
	copy(out[2:], d)
	return Number{country: Sweden, digits: string(out[:])}, nil
}

// luhn reports whether the ten digits d end in their Luhn check digit.
func luhn(d []byte) bool {
	sum := 0
	for i, x := range d {
		v := int(x - '0')
		if i%2 == 0 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// parseDenmark checks a CPR number: DDMMYY and four digits whose first, with YY, gives the
// century. There is no check digit: CPR numbers issued since 2007 need not pass mod-11.
func parseDenmark(w written) (Number, error) {
	d := w.d[:w.n]
	if len(d) != 10 || w.plus {
		return Number{}, &invalid{country: Denmark, reason: "not 10 digits"}
	}
	yy := num(d[4:6])
	var century int
	switch c := d[6]; {
	case c <= '3':
		century = 1900
	case c == '4' || c == '9':
		century = 1900
		if yy <= 36 {
			century = 2000
		}
	default: // 5 to 8
		century = 1800
		if yy <= 57 {
			century = 2000
		}
	}
	if !validDate(century+yy, num(d[2:4]), num(d[0:2])) {
		return Number{}, &invalid{country: Denmark, reason: "date"}
	}
	return Number{country: Denmark, digits: string(d)}, nil
}

// validDate reports whether year-month-day is a date of the Gregorian calendar.
func validDate(year, month, day int) bool {
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	return day <= time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// num is the value of the ASCII digits d.
func num(d []byte) int {
	n := 0
	for _, x := range d {
		n = n*10 + int(x-'0')
	}
	return n
}
