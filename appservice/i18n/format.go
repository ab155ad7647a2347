package i18n

import (
	"fmt"
	"time"
)

// DateTime writes t (in its own location) as lang writes a date and a time, the way the
// page's Intl.DateTimeFormat does for the language with two-digit day, month, hour and
// minute (CLDR's short patterns): the PDF and the page show one time alike.
//
//	en 11/27/2026 09:12 AM
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
	case "sv":
		return t.Format("2006-01-02")
	case "nb", "da", "de":
		return t.Format("02.01.2006")
	}
	return t.Format("01/02/2006")
}

func clock(lang string, t time.Time) string {
	switch lang {
	case "da":
		return t.Format("15.04")
	case "nb", "sv", "de":
		return t.Format("15:04")
	}
	h := t.Hour() % 12
	if h == 0 {
		h = 12
	}
	return fmt.Sprintf("%02d:%02d %s", h, t.Minute(), t.Format("PM"))
}
