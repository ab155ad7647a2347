package lifecycle

import (
	"errors"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// locationKey is the current user's software key for the wrapper; its value path is the
// program's folder, which integrators read to start it (B-ARG, VER-2).
const locationKey = `Software\` + vendor + `\` + product

// registerLocation writes the program's folder to HKCU\<locationKey> path when it changed,
// in the installer's form (folderPath). Windows paths ignore case, so the installer's
// value for this folder is kept as it was written.
func registerLocation(dir string) error {
	dir = folderPath(dir)
	k, _, err := registry.CreateKey(registry.CURRENT_USER, locationKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	old, _, err := k.GetStringValue("path")
	if err == nil && strings.EqualFold(old, dir) {
		return nil
	}
	if err != nil && !errors.Is(err, registry.ErrNotExist) {
		return err
	}
	return k.SetStringValue("path", dir)
}
