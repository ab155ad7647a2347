package webwrapper

import (
	"strings"
	"testing"
)

// TestCulture: with Culture=nb-NO, or a start's culture=sv-SE (the Arguments protocol's
// key, which the original read too), the wrapper opens the start URL with that culture and
// the browser in that language: the person sees the sign-in page, and after signing in
// the application, in Norwegian or Swedish.
func TestCulture(t *testing.T) {
	s := startStack(t)
	for _, tt := range []struct {
		name     string
		settings map[string]string
		args     []string
		lang     string
		culture  string
		signIn   string
		signOut  string
	}{
		{"setting", map[string]string{"Culture": "nb-NO"}, nil, "nb", "nb-NO", "Logg inn", "Logg ut"},
		{"argument", map[string]string{"Culture": "nb-NO"}, []string{"culture=sv-SE"}, "sv", "sv-SE", "Logga in", "Logga ut"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDesktop(t, s, tt.settings)
			w := d.start(t, tt.args...)
			p := w.attach(t)
			p.waitFor(t, "the sign-in page", `document.getElementById("password")`)
			if got := eval[string](t, p, `document.documentElement.lang`); got != tt.lang {
				t.Errorf("sign-in page lang = %q, want %q", got, tt.lang)
			}
			if got := p.text(t, "h1"); got != tt.signIn {
				t.Errorf("sign-in heading = %q, want %q", got, tt.signIn)
			}
			if loc := p.location(); !strings.Contains(loc, "culture="+tt.culture) {
				t.Errorf("start URL %q lacks culture=%s", loc, tt.culture)
			}
			if got := eval[string](t, p, `navigator.language`); !strings.HasPrefix(got, tt.lang) {
				t.Errorf("browser language = %q, want %s", got, tt.culture)
			}
			p.screenshot(t, "signin-"+tt.lang)
			p.signIn(t)
			if got := p.text(t, "#signout"); got != tt.signOut {
				t.Errorf("application's sign-out button = %q, want %q", got, tt.signOut)
			}
			p.screenshot(t, "app-"+tt.lang)
			w.close(t)
		})
	}
}
