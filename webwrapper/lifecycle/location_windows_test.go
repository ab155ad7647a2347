package lifecycle

import (
	"testing"

	"golang.org/x/sys/windows/registry"
)

// The program's folder is written to HKCU\Software\Svc\Svc Webwrapper, value path, where
// integrators read it, in the MSI's form ([INSTALLDIR]: ending in a backslash) so that
// the program is path + Svc.Client.WebWrapper.exe whoever wrote it; a move (an update into
// a new folder) rewrites it, and the installer's value for this folder is kept as it is,
// in whatever case it was written.
func TestRegisterLocation(t *testing.T) {
	key := `Software\Svc\Svc Webwrapper`
	t.Cleanup(func() { _ = registry.DeleteKey(registry.CURRENT_USER, key) })
	read := func() string {
		k, err := registry.OpenKey(registry.CURRENT_USER, key, registry.QUERY_VALUE)
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
	write := func(v string) {
		k, _, err := registry.CreateKey(registry.CURRENT_USER, key, registry.SET_VALUE)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		if err := k.SetStringValue("path", v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, before, dir, want string
	}{
		{"first start", "", `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.7`, `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.7\`},
		{"moved", `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.7\`, `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8`, `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8\`},
		{"the installer's", `C:\Users\Asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8\`, `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8`, `C:\Users\Asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8\`},
		{"an older wrapper's", `C:\Programs\Webwrapper`, `C:\Programs\Webwrapper`, `C:\Programs\Webwrapper\`},
		{"a drive's root", "", `D:\`, `D:\`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_ = registry.DeleteKey(registry.CURRENT_USER, key)
			if tt.before != "" {
				write(tt.before)
			}
			if err := registerLocation(tt.dir); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != tt.want {
				t.Errorf("registerLocation(%q) over %q: path = %q, want %q", tt.dir, tt.before, got, tt.want)
			}
		})
	}
}
