// Package wintest helps the desktop wrapper's tests run as Windows programs under Wine as
// well as on Linux (scripts/wine.sh): a temporary folder whose cleanup Wine can carry out,
// and the user's short date format set as each system keeps it.
package wintest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TempDir is t.TempDir, of mode 0700 as the wrapper's own folders are (a socket is made
// only in such a folder), and on Windows removed file by file: Go 1.26's os.RemoveAll on
// Windows deletes with a call Wine 8 does not implement ("unlinkat …: Invalid function"),
// which would fail every test that made a folder.
func TempDir(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "windows" {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatalf("making a temporary folder private: %v", err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "wintest-")
	if err != nil {
		t.Fatalf("making a temporary folder: %v", err)
	}
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			if err == nil {
				paths = append(paths, p)
			}
			return nil
		})
		// Deepest first: files and folders before the folders that hold them.
		slices.Reverse(paths)
		for _, p := range paths {
			if err := os.Remove(p); err != nil {
				t.Errorf("removing %s: %v", p, err)
			}
		}
	})
	return dir
}
