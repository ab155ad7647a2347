package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows/registry"

	"github.com/partnergate/partnergate/internal/wintest"
)

// FindBrowser finds Edge where its installer registered it (App Paths), read from the
// registry as Windows code.
func TestFindBrowserAppPaths(t *testing.T) {
	edge := filepath.Join(wintest.TempDir(t), "msedge.exe")
	if err := os.WriteFile(edge, []byte("MZ"), 0o755); err != nil {
		t.Fatal(err)
	}
	k, _, err := registry.CreateKey(registry.CURRENT_USER, appPathsKey+"msedge.exe", registry.SET_VALUE)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	t.Cleanup(func() { _ = registry.DeleteKey(registry.CURRENT_USER, appPathsKey+"msedge.exe") })
	if err := k.SetStringValue("", edge); err != nil {
		t.Fatal(err)
	}
	if got := appPath("msedge.exe"); got != edge {
		t.Errorf("appPath(msedge.exe) = %q, want %q", got, edge)
	}
	if got, err := FindBrowser(true); err != nil || !strings.EqualFold(got, edge) {
		t.Errorf("FindBrowser(prefer Edge) = %q, %v; want %q", got, err, edge)
	}
}
