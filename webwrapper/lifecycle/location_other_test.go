//go:build !windows

package lifecycle

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRegisterLocation(t *testing.T) {
	home := userDirs(t)
	if err := registerLocation("/opt/webwrapper/2.1.5.0"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "data", vendor, product, "path")
	if b, err := os.ReadFile(path); err != nil || string(b) != "/opt/webwrapper/2.1.5.0\n" {
		t.Errorf("%s = %q, %v", path, b, err)
	}
	if err := registerLocation("/opt/webwrapper/2.1.6.0"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "/opt/webwrapper/2.1.6.0\n" {
		t.Errorf("after a move %q", b)
	}
}
