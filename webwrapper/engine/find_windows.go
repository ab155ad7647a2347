package engine

import (
	"golang.org/x/sys/windows/registry"
)

// appPathsKey is where installers register an executable for the shell (Start, Run): its
// default value is the full path. Chrome and Edge register chrome.exe and msedge.exe there.
const appPathsKey = `SOFTWARE\Microsoft\Windows\CurrentVersion\App Paths\`

// appPath gives the registered path of exe, the current user's registration first (a
// per-user Chrome), then the machine's; "" when neither has one.
func appPath(exe string) string {
	for _, root := range []registry.Key{registry.CURRENT_USER, registry.LOCAL_MACHINE} {
		k, err := registry.OpenKey(root, appPathsKey+exe, registry.QUERY_VALUE)
		if err != nil {
			continue
		}
		p, _, err := k.GetStringValue("")
		k.Close()
		if err == nil && p != "" {
			return p
		}
	}
	return ""
}
