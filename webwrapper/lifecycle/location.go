package lifecycle

import (
	"os"
	"path/filepath"
)

// folderPath is dir ending in a path separator, the form in which the MSI writes the
// registry value path ([INSTALLDIR] ends in a backslash): integrators append the
// program's name to it, so whoever writes it, installer or program, writes one form.
func folderPath(dir string) string {
	if dir == "" || os.IsPathSeparator(dir[len(dir)-1]) {
		return dir
	}
	return dir + string(filepath.Separator)
}
