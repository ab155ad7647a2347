//go:build !windows

package lifecycle

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// locationFile is where integrators find the program's folder outside Windows, the
// counterpart of the registry value path: a file "path" holding the folder, ending in a
// separator (folderPath), and a newline, in the user's data folder ($XDG_DATA_HOME or
// ~/.local/share; on macOS ~/Library/Application Support) under <vendor>/<product>.
func locationFile() (string, error) {
	var dir string
	switch {
	case runtime.GOOS == "darwin":
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		dir = d
	case filepath.IsAbs(os.Getenv("XDG_DATA_HOME")):
		dir = os.Getenv("XDG_DATA_HOME")
	default:
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, vendor, product, "path"), nil
}

// registerLocation writes the program's folder to locationFile when it changed.
func registerLocation(dir string) error {
	path, err := locationFile()
	if err != nil {
		return fmt.Errorf("finding the user data folder: %w", err)
	}
	want := []byte(folderPath(dir) + "\n")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, want) {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, want, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
