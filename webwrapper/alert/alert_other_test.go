//go:build !windows

package alert

import (
	"context"
	"testing"
)

// The desktop's language from the locale environment, as a BCP 47 tag.
func TestLanguage(t *testing.T) {
	for _, tt := range []struct{ language, all, messages, lang, want string }{
		{"", "", "", "nb_NO.UTF-8", "nb-NO"},
		{"", "", "da_DK.UTF-8", "en_US.UTF-8", "da-DK"},
		{"", "de_DE@euro", "da_DK.UTF-8", "", "de-DE"},
		{"sv_SE:en", "", "", "nb_NO.UTF-8", "sv-SE"},
		{"", "C.UTF-8", "", "nb_NO.UTF-8", ""},
		{"", "", "", "", ""},
	} {
		t.Setenv("LANGUAGE", tt.language)
		t.Setenv("LC_ALL", tt.all)
		t.Setenv("LC_MESSAGES", tt.messages)
		t.Setenv("LANG", tt.lang)
		if got := Language(); got != tt.want {
			t.Errorf("Language() with LANGUAGE=%q LC_ALL=%q LC_MESSAGES=%q LANG=%q = %q, want %q", tt.language, tt.all, tt.messages, tt.lang, got, tt.want)
		}
	}
}

// Without a session bus Show says so at once. The notification itself, shown by a real notification daemon, is integration/webwrapper's
// TestFailuresShown.
func TestShowWithoutBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := Show(context.Background(), Message{Title: "Svc Webwrapper", Text: "x"}); err == nil {
		t.Error("Show without a session bus = nil, want an error")
	}
}

func TestEscapeMarkup(t *testing.T) {
	if got, want := escapeMarkup(`C:\EHR & <export>\input.xml`), `C:\EHR &amp; &lt;export&gt;\input.xml`; got != want {
		t.Errorf("escapeMarkup = %q, want %q", got, want)
	}
}
