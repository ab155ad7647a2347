package i18n

import "time"

// DateTime writes t (in its own location) as lang writes a date and a time, the way the
// page's Intl.DateTimeFormat does for the language with two-digit day, month, hour and
// minute (CLDR's patterns): the PDF and the page show one time alike. English, the
// fallback of every reader the service has no language for, writes ISO 8601: 11/27 and
// 27/11 mean different days to American and British readers.
//
//	en 2026-11-27 09:12
//	nb 27.11.2026 09:12
//	sv 2026-11-27 09:12
//	da 27.11.2026 09.12
//	de 27.11.2026 09:12
func DateTime(lang string, t time.Time) string {
	return Date(lang, t) + " " + clock(lang, t)
}

// Date writes t's date as lang does (the date half of DateTime).
func Date(lang string, t time.Time) string {
	switch lang {
	case "nb", "da", "de":
		return t.Format("02.01.2006")
	}
	return t.Format("2006-01-02")
}

// Day writes a date given as yyyy-MM-dd (a birth date) as lang does; any other value as
// it is.
func Day(lang, isoDate string) string {
	t, err := time.Parse("2006-01-02", isoDate)
	if err != nil {
		return isoDate
	}
	return Date(lang, t)
}

func clock(lang string, t time.Time) string {
	if lang == "da" {
		return t.Format("15.04")
	}
	return t.Format("15:04")
}
