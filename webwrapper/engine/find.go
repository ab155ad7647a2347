package engine

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
)

// FindBrowser finds a Chromium-family browser: on Windows Chrome, then Edge (Edge first
// with preferEdge, the WebViewBrowser setting: the newer engine of the operating system);
// elsewhere Debian's chromium first.
func FindBrowser(preferEdge bool) (string, error) {
	for _, c := range candidates(runtime.GOOS, preferEdge, os.Getenv) {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", errors.New("finding a browser: no Chromium, Chrome or Edge is installed")
}

// candidates lists the browsers to try on goos, in order.
func candidates(goos string, preferEdge bool, getenv func(string) string) []string {
	// under is the path below the folder of the environment variable env, or nothing
	// when env is unset (a relative path would be looked up in the working folder).
	under := func(env, path string) []string {
		if dir := getenv(env); dir != "" {
			return []string{dir + `\` + path}
		}
		return nil
	}
	switch goos {
	case "windows":
		chrome := slices.Concat([]string{"chrome.exe"},
			under("ProgramFiles", `Google\Chrome\Application\chrome.exe`),
			under("ProgramFiles(x86)", `Google\Chrome\Application\chrome.exe`),
			under("LocalAppData", `Google\Chrome\Application\chrome.exe`))
		edge := slices.Concat([]string{"msedge.exe"},
			under("ProgramFiles(x86)", `Microsoft\Edge\Application\msedge.exe`),
			under("ProgramFiles", `Microsoft\Edge\Application\msedge.exe`))
		if preferEdge {
			return append(edge, chrome...)
		}
		return append(chrome, edge...)
	case "darwin":
		chrome := []string{
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
		}
		edge := []string{"/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge"}
		if preferEdge {
			return append(edge, chrome...)
		}
		return append(chrome, edge...)
	}
	return []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "microsoft-edge"}
}
