package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
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
	}{
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"-browser", "/nowhere", "provider=Nope.Component, Nope"}, "unknown protocol provider"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), tt.args, &stderr); code != lifecycle.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("run(%q) = %d, %q; want %d and %q", tt.args, code, stderr.String(), lifecycle.ExitUsage, tt.want)
		}
	}
}
