package alert

import "golang.org/x/sys/windows"

// Language is the language of the person's desktop, a BCP 47 tag ("nb-NO"): Windows' first
// preferred display language; "" when the call fails.
func Language() string {
	langs, err := windows.GetUserPreferredUILanguages(windows.MUI_LANGUAGE_NAME)
	if err != nil || len(langs) == 0 {
		return ""
	}
	return langs[0]
}
