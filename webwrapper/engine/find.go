package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

// FindBrowser finds a Chromium-family browser: on Windows Chrome, then Edge (Edge first
// with preferEdge, the WebViewBrowser setting: the newer engine of the operating system),
// each where its installer registered it (the App Paths key of the current user, then of
// the machine, as the Windows shell finds chrome.exe and msedge.exe), then on PATH, then
// in its usual folders; elsewhere Debian's chromium first. Without any, the wrapper cannot
// start: the error, an ErrNoBrowser, names the browsers it looked for.
func FindBrowser(preferEdge bool) (string, error) {
	for _, c := range candidates(runtime.GOOS, preferEdge, os.Getenv, appPath) {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	if runtime.GOOS == "windows" {
		return "", fmt.Errorf("finding a browser: %w (App Paths, PATH, Program Files, LocalAppData)", ErrNoBrowser)
	}
	return "", fmt.Errorf("finding a browser: %w", ErrNoBrowser)
}

// ErrNoBrowser is FindBrowser's error when none of the browsers the wrapper can use is
// installed, Browsers.
var ErrNoBrowser = errors.New("neither " + strings.Join(Browsers(runtime.GOOS), " nor ") + " is installed")

// Browsers names the browsers the wrapper can show its window in on goos, for people.
func Browsers(goos string) []string {
	if goos == "windows" {
		return []string{"Microsoft Edge", "Google Chrome"}
	}
	return []string{"Chromium", "Google Chrome", "Microsoft Edge"}
}

// candidates lists the browsers to try on goos, in order; appPath gives a Windows
// executable's registered path ("" when none).
func candidates(goos string, preferEdge bool, getenv func(string) string, appPath func(string) string) []string {
	// under is the path below the folder of the environment variable env, or nothing
	// when env is unset (a relative path would be looked up in the working folder).
	under := func(env, path string) []string {
		if dir := getenv(env); dir != "" {
			return []string{dir + `\` + path}
		}
		return nil
	}
	registered := func(exe string) []string {
		if p := appPath(exe); p != "" {
			return []string{p}
		}
		return nil
	}
	switch goos {
	case "windows":
		chrome := slices.Concat(registered("chrome.exe"), []string{"chrome.exe"},
			under("ProgramFiles", `Google\Chrome\Application\chrome.exe`),
			under("ProgramFiles(x86)", `Google\Chrome\Application\chrome.exe`),
			under("LocalAppData", `Google\Chrome\Application\chrome.exe`))
		edge := slices.Concat(registered("msedge.exe"), []string{"msedge.exe"},
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
