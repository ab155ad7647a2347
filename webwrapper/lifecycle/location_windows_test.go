package lifecycle

import (
	"testing"

	"golang.org/x/sys/windows/registry"
)

// The program's folder is written to HKCU\Software\Svc\Svc Webwrapper, value path, where
// integrators read it; a move (an update into a new folder) rewrites it.
func TestRegisterLocation(t *testing.T) {
	read := func() string {
		k, err := registry.OpenKey(registry.CURRENT_USER, `Software\Svc\Svc Webwrapper`, registry.QUERY_VALUE)
		if err != nil {
			t.Fatalf("opening the key: %v", err)
		}
		defer k.Close()
		v, _, err := k.GetStringValue("path")
		if err != nil {
			t.Fatalf("reading path: %v", err)
		}
		return v
	}
	for _, dir := range []string{`C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.7`, `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8`} {
		if err := registerLocation(dir); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != dir {
			t.Errorf("path = %q, want %q", got, dir)
		}
	}
	t.Cleanup(func() { _ = registry.DeleteKey(registry.CURRENT_USER, `Software\Svc\Svc Webwrapper`) })
}
