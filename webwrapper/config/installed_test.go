package config

import "testing"

// The installer's settings come between the user's and the .exe.config's; a blank one,
// and a value of another name in the installer's key (path), count for nothing.
func TestInstall(t *testing.T) {
	user := `<?xml version="1.0" encoding="utf-8"?>
<configuration><userSettings><Svc.Properties.Settings>
<setting name="Culture" serializeAs="String"><value>sv-SE</value></setting>
</Svc.Properties.Settings></userSettings></configuration>`
	c, _ := load(t, appConfig, user)
	c.install(map[string]string{
		AppUrl:     "https://ehr.clinic.example/app/signin",
		Culture:    "nb-NO",
		UpdateSite: " ",
		Debug:      "False",
		"path":     `C:\elsewhere\`,
	})
	for _, tt := range []struct{ name, want string }{
		{AppUrl, "https://ehr.clinic.example/app/signin"}, // the installer's over the .exe.config's
		{Culture, "sv-SE"},                     // the user's over the installer's
		{UpdateSite, settings[UpdateSite].def}, // blank: not set
		{AdfsUrl, ""},                          // not given
		{Debug, "true"},                        // not an installer's setting
	} {
		if got := c.String(tt.name); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := c.String("path"); got != "" {
		t.Errorf(`String("path") = %q, want nothing`, got)
	}
}
