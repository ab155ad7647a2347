//go:build !windows

package lifecycle

import (
	"os"
	"path/filepath"
	"testing"
)

// The path file holds the folder in the form the Windows installer writes path: ending
// in a separator, so that the program is its text + the program's name.
func TestRegisterLocation(t *testing.T) {
	home := userDirs(t)
	path := filepath.Join(home, "data", vendor, product, "path")
	for _, tt := range []struct{ dir, want string }{
		{"/opt/webwrapper/2.1.5.0", "/opt/webwrapper/2.1.5.0/\n"},
		{"/opt/webwrapper/2.1.6.0", "/opt/webwrapper/2.1.6.0/\n"}, // moved
		{"/", "/\n"},
	} {
		if err := registerLocation(tt.dir); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != tt.want {
			t.Errorf("registerLocation(%q): %s = %q, %v; want %q", tt.dir, path, b, err, tt.want)
		}
	}
}
