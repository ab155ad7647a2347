// Package culture reads dates the way the original .NET wrapper did: ISO 8601 first, then
// the short date pattern of the user's culture, which Windows gives through GetLocaleInfoEx
// and other systems through the locale environment (B-ARG). The arguments, the input.xml
// file and the pipe's selectperson all read a date of birth with it.
package culture

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// shortDates maps a locale (language_TERRITORY, as the locale environment names it) or a
// language alone to its short date pattern in .NET notation, the patterns Windows gives
// for these cultures. Locales not listed fall back to their language, then to ISO only.
var shortDates = map[string]string{
	"nb_NO": "dd.MM.yyyy", "nn_NO": "dd.MM.yyyy", "no_NO": "dd.MM.yyyy",
	"da_DK": "dd-MM-yyyy",
	"sv_SE": "yyyy-MM-dd", "sv_FI": "d.M.yyyy",
	"fi_FI": "d.M.yyyy",
	"is_IS": "d.M.yyyy",
	"de_DE": "dd.MM.yyyy", "de_AT": "dd.MM.yyyy", "de_CH": "dd.MM.yyyy",
	"en_US": "M/d/yyyy", "en_GB": "dd/MM/yyyy", "en_IE": "dd/MM/yyyy", "en_AU": "d/MM/yyyy",
	"en_NZ": "d/MM/yyyy", "en_CA": "yyyy-MM-dd",
	"fr_FR": "dd/MM/yyyy", "fr_CA": "yyyy-MM-dd", "fr_CH": "dd.MM.yyyy", "fr_BE": "dd-MM-yyyy",
	"nl_NL": "d-M-yyyy", "nl_BE": "d/MM/yyyy",
	"es_ES": "dd/MM/yyyy", "it_IT": "dd/MM/yyyy", "pt_PT": "dd/MM/yyyy", "pt_BR": "dd/MM/yyyy",
	"pl_PL": "dd.MM.yyyy", "cs_CZ": "dd.MM.yyyy", "et_EE": "dd.MM.yyyy", "lt_LT": "yyyy-MM-dd",
	"nb": "dd.MM.yyyy", "nn": "dd.MM.yyyy", "no": "dd.MM.yyyy", "da": "dd-MM-yyyy",
	"sv": "yyyy-MM-dd", "fi": "d.M.yyyy", "de": "dd.MM.yyyy", "en": "M/d/yyyy",
	"fr": "dd/MM/yyyy", "nl": "d-M-yyyy", "es": "dd/MM/yyyy", "it": "dd/MM/yyyy",
	"pl": "dd.MM.yyyy",
}

// PatternForLocale gives the short date pattern of a POSIX locale name such as
// "nb_NO.UTF-8" or "de_DE@euro"; "" (ISO only) for C, POSIX and unknown locales.
func PatternForLocale(name string) string {
	name, _, _ = strings.Cut(name, ".")
	name, _, _ = strings.Cut(name, "@")
	name = strings.ReplaceAll(name, "-", "_")
	if p, ok := shortDates[name]; ok {
		return p
	}
	lang, _, _ := strings.Cut(name, "_")
	return shortDates[strings.ToLower(lang)]
}

// ErrDate is the one error of ParseDate; it never quotes the value (a birth date).
var ErrDate = errors.New("must be a date yyyy-MM-dd or in the system's short date format")

// ParseDate reads a date of birth: ISO 8601 (yyyy-MM-dd, or a date and time of which the
// date counts) first, then the culture's short date pattern, as the original did.
func ParseDate(s, pattern string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if len(s) > len(time.DateOnly) && s[len(time.DateOnly)] == 'T' {
		if t, err := time.Parse(time.DateOnly, s[:len(time.DateOnly)]); err == nil {
			return t, nil
		}
	}
	if pattern == "" {
		return time.Time{}, ErrDate
	}
	return parsePattern(s, pattern)
}

// parsePattern reads s by a .NET short date pattern (d, dd, M, MM, yy, yyyy and one
// separator). Like .NET's DateTime.Parse it takes one or two digits for day and month
// whatever the pattern's width; unlike it, a year must have four digits, since a
// two-digit birth year is ambiguous.
func parsePattern(s, pattern string) (time.Time, error) {
	isField := func(r rune) bool { return r == 'd' || r == 'M' || r == 'y' }
	fields := strings.FieldsFunc(pattern, func(r rune) bool { return !isField(r) })
	if len(fields) != 3 {
		return time.Time{}, ErrDate
	}
	// The separator is what stands between the first two fields: "." or "/", or ". " as
	// in Czech "d. M. yyyy", where the space is optional in what people type.
	start := len(fields[0])
	sep := strings.TrimSpace(pattern[start : start+strings.IndexFunc(pattern[start:], isField)])
	var parts []string
	if sep == "" {
		parts = strings.Fields(s)
	} else {
		parts = strings.Split(strings.TrimSpace(s), sep)
	}
	if len(parts) != 3 {
		return time.Time{}, ErrDate
	}
	var day, month, year int
	for i, f := range fields {
		p := strings.TrimSpace(parts[i])
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' || p[0] == '-' {
			return time.Time{}, ErrDate
		}
		switch f[0] {
		case 'd':
			day = n
			if len(p) > 2 {
				return time.Time{}, ErrDate
			}
		case 'M':
			month = n
			if len(p) > 2 {
				return time.Time{}, ErrDate
			}
		case 'y':
			year = n
			if len(p) != 4 {
				return time.Time{}, ErrDate
			}
		}
	}
	t := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
	if t.Day() != day || int(t.Month()) != month || t.Year() != year {
		return time.Time{}, ErrDate
	}
	return t, nil
}
