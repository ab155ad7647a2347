package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/lifecycle"
)

// A flag the program does not know exits 2 and says so; the protocol's arguments after
// the flags reach the wrapper, whose unknown provider exits 2 too.
func TestFlags(t *testing.T) {
	home := wintest.TempDir(t)
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_CACHE_HOME": filepath.Join(home, "cache"), "XDG_DATA_HOME": filepath.Join(home, "data"),
		"LOCALAPPDATA": filepath.Join(home, "local"), "APPDATA": filepath.Join(home, "roaming")} {
		t.Setenv(k, v)
	}
	for _, tt := range []struct {
		args []string
		want string
		told int // a bad flag is the caller's (a script's, a test's), not a person's
	}{
		{[]string{"-no-such-flag"}, "flag provided but not defined", 0},
		{[]string{"-browser", "/nowhere", "provider=Nope.Component, Nope"}, "unknown protocol provider", 1},
	} {
		var stderr bytes.Buffer
		told := 0
		o := lifecycle.Options{Stderr: &stderr, Alert: func(context.Context, alert.Message) error { told++; return nil }}
		if code := run(context.Background(), tt.args, o); code != lifecycle.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("run(%q) = %d, %q; want %d and %q", tt.args, code, stderr.String(), lifecycle.ExitUsage, tt.want)
		}
		if want := tt.told; told != want {
			t.Errorf("run(%q) told the person %d times, want %d", tt.args, told, want)
		}
	}
}
