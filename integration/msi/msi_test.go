// Package msi tests the desktop wrapper's Windows program and installer as an integrator's
// IT department meets them: scripts/build-windows.sh builds two builds of
// Svc.Client.WebWrapper.exe and their MSIs; the test reads the program's version resource
// and the MSI's tables (msiinfo), then installs, upgrades and removes the package with
// Wine's msiexec in a Wine prefix of its own (scripts/wine.sh) and checks the files, the
// registry value path and the Start-menu shortcut. docs/webwrapper.md says what Wine
// cannot show.
package msi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tc-hib/winres"
	"github.com/tc-hib/winres/version"

	"github.com/partnergate/partnergate/webwrapper/config"
)

// root is the repository, two folders up from this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs a command from the repository with env added, and returns its output.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Wine's background programs (wineserver, services.exe) may outlive the command with
	// its output still open: do not wait for them once the command has exited.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// appURL is the service the test's builds are made for; their update site is then
// /webwrapper/ on its host.
const (
	appURL     = "https://gateway.clinic.example/app/signin?tenant=a&b"
	updateSite = "https://gateway.clinic.example/webwrapper/"
)

// builds holds each build made, for the tests of this package to share.
var (
	buildsMu sync.Mutex
	builds   = map[string]string{}
	buildDir string
)

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "msi-builds-"); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(buildDir)
	os.Exit(code)
}

// build builds build n of the program and its MSI into a folder of its own, once.
func build(t *testing.T, n string) (dir, msi string) {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	dir, ok := builds[n]
	if !ok {
		dir = filepath.Join(buildDir, n)
		run(t, nil, "scripts/build-windows.sh", "--app-url", appURL, dir, n)
		builds[n] = dir
	}
	msi = filepath.Join(dir, "SvcWebwrapper-2.1.5."+n+".msi")
	if _, err := os.Stat(msi); err != nil {
		t.Fatalf("the MSI is not named by its version: %v", err)
	}
	return dir, msi
}

func TestProgramResources(t *testing.T) {
	dir, _ := build(t, "7")
	f, err := os.Open(filepath.Join(dir, "files", "Svc.Client.WebWrapper.exe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := winres.LoadFromEXE(f)
	if err != nil {
		t.Fatalf("reading the program's resources: %v", err)
	}
	var vi *version.Info
	rs.WalkType(winres.RT_VERSION, func(_ winres.Identifier, _ uint16, data []byte) bool {
		vi, err = version.FromBytes(data)
		return false
	})
	if vi == nil || err != nil {
		t.Fatalf("no version resource (%v)", err)
	}
	if vi.FileVersion != [4]uint16{2, 1, 5, 7} || vi.ProductVersion != [4]uint16{2, 1, 5, 7} {
		t.Errorf("fixed file version %v, product version %v; want 2.1.5.7", vi.FileVersion, vi.ProductVersion)
	}
	raw, _ := vi.MarshalJSON()
	var doc struct {
		Info map[string]map[string]string `json:"info"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	strs := doc.Info["0409"]
	for k, want := range map[string]string{"FileVersion": "2.1.5.7", "ProductVersion": "2.1.5.7", "ProductName": "Svc Webwrapper",
		"CompanyName": "Svc", "OriginalFilename": "Svc.Client.WebWrapper.exe"} {
		if strs[k] != want {
			t.Errorf("version string %s = %q, want %q", k, strs[k], want)
		}
	}
	icons := 0
	rs.WalkType(winres.RT_GROUP_ICON, func(winres.Identifier, uint16, []byte) bool { icons++; return true })
	if icons == 0 {
		t.Error("the program has no icon")
	}
	lic, err := os.ReadFile(filepath.Join(dir, "files", "LICENSES.txt"))
	if err != nil || !bytes.Contains(lic, []byte("github.com/chromedp/chromedp")) || !bytes.Contains(lic, []byte("github.com/Microsoft/go-winio")) {
		t.Errorf("LICENSES.txt lacks the modules compiled in (%v)", err)
	}
}

// The build writes the service's addresses into the application config it installs, and
// refuses one that would send a password or a download link in the clear.
func TestBuildAddresses(t *testing.T) {
	dir, _ := build(t, "7")
	c, err := config.Load(filepath.Join(dir, "files", "Svc.Client.WebWrapper.exe.config"), filepath.Join(t.TempDir(), "user.config"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.String(config.AppUrl); got != appURL {
		t.Errorf("the installed .exe.config's AppUrl = %q, want %q", got, appURL)
	}
	if got := c.String(config.UpdateSite); got != updateSite {
		t.Errorf("the installed .exe.config's UpdateSite = %q, want %q (the app's host)", got, updateSite)
	}
	for _, args := range [][]string{
		{"--app-url", "http://gateway.clinic.example/app/signin"},
		{"--app-url", "https://gateway.clinic.example/app/signin", "--update-site", "http://downloads.clinic.example/"},
		{"--app-url", "https://user@gateway.clinic.example/app/signin"},
		{}, // no address at all
	} {
		out := filepath.Join(t.TempDir(), "out")
		cmd := exec.Command("scripts/build-windows.sh", append(args, out, "1")...)
		cmd.Dir = root(t)
		msg, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
			t.Errorf("build-windows.sh %q: status %d (%v), want 2\n%s", args, code, err, msg)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("build-windows.sh %q made %s (%v): want nothing built", args, out, err)
		}
	}
}

// The build makes the site to publish: its MSI, the feed naming its version and SHA-256,
// and the download page showing them.
func TestBuildSite(t *testing.T) {
	dir, msi := build(t, "7")
	built, err := os.ReadFile(msi)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(built)
	hexSum := hex.EncodeToString(sum[:])
	site := filepath.Join(dir, "site")
	if b, err := os.ReadFile(filepath.Join(site, "SvcWebwrapper-2.1.5.7.msi")); err != nil || !bytes.Equal(b, built) {
		t.Errorf("site/SvcWebwrapper-2.1.5.7.msi: %v, the built MSI %v", err, bytes.Equal(b, built))
	}
	var feed struct{ Version, SHA256, URL string }
	if b, err := os.ReadFile(filepath.Join(site, "stable.json")); err != nil || json.Unmarshal(b, &feed) != nil ||
		feed.Version != "2.1.5.7" || feed.SHA256 != hexSum || feed.URL != "" {
		t.Errorf("site/stable.json = %s (%v), want version 2.1.5.7 and sha256 %s", b, err, hexSum)
	}
	if b, err := os.ReadFile(filepath.Join(site, "index.html")); err != nil || !bytes.Contains(b, []byte(hexSum)) || !bytes.Contains(b, []byte(`href="SvcWebwrapper-2.1.5.7.msi"`)) {
		t.Errorf("site/index.html lacks the download or its SHA-256 (%v)", err)
	}
}

// msiTable exports one table as rows of tab-separated columns, without its three header
// lines. msiinfo writes the streams of a binary table (Icon) as files into the folder it
// runs in: a temporary one, not the repository.
func msiTable(t *testing.T, msi, table string) [][]string {
	t.Helper()
	cmd := exec.Command("msiinfo", "export", msi, table)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("msiinfo export %s %s: %v\n%s", msi, table, err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var rows [][]string
	for _, l := range lines[min(3, len(lines)):] {
		rows = append(rows, strings.Split(strings.TrimRight(l, "\r"), "\t"))
	}
	return rows
}

func hasRow(rows [][]string, want ...string) bool {
	for _, r := range rows {
		if len(r) < len(want) {
			continue
		}
		match := true
		for i, w := range want {
			if w != "*" && r[i] != w {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

func TestMSITables(t *testing.T) {
	_, msi := build(t, "7")
	if s := run(t, nil, "msiinfo", "suminfo", msi); !strings.Contains(s, "Template: x64;1033") || !strings.Contains(s, "Subject: Svc Webwrapper 2.1.5.7") {
		t.Errorf("summary information:\n%s", s)
	}
	for _, tt := range []struct {
		table string
		row   []string
	}{
		{"Property", []string{"ProductVersion", "2.1.5.7"}},
		{"Property", []string{"ProductName", "Svc Webwrapper"}},
		{"Property", []string{"ALLUSERS", "2"}},
		{"Property", []string{"MSIINSTALLPERUSER", "1"}}, // per user: no administrator rights
		{"Directory", []string{"VendorFolder", "AppDataFolder", "Svc"}},
		{"Directory", []string{"ProductFolder", "VendorFolder", "Svc Webwrapper"}},
		{"Directory", []string{"INSTALLDIR", "ProductFolder", "2.1.5.7"}}, // a folder per version
		{"File", []string{"WebWrapperExe", "ProgramExe", "Svc.Client.WebWrapper.exe"}},
		{"File", []string{"*", "Program", "Svc.Client.WebWrapper.exe.config"}},
		{"File", []string{"*", "Program", "svcpipe.exe"}},
		{"File", []string{"*", "Program", "LICENSES.txt"}},
		{"Registry", []string{"*", "1", `Software\Svc\Svc Webwrapper`, "path", "[INSTALLDIR]", "Program"}}, // HKCU
		// Advertised installation, msiexec /jm (B-INST): the shortcut's target is the
		// feature, not a path, so that starting it installs or repairs the feature and
		// then runs the key path of its component, the program itself.
		{"Shortcut", []string{"*", "ProgramMenuFolder", "Svc Webwrapper", "ProgramExe", "Complete", "", "*", "", "webwrapper.ico"}},
		{"Component", []string{"ProgramExe", "*", "INSTALLDIR", "*", "", "WebWrapperExe"}},
		{"FeatureComponents", []string{"Complete", "ProgramExe"}},
		{"Icon", []string{"webwrapper.ico"}},
		{"AdvtExecuteSequence", []string{"CreateShortcuts"}},
		{"AdvtExecuteSequence", []string{"PublishFeatures"}},
		{"AdvtExecuteSequence", []string{"PublishProduct"}},
		{"Upgrade", []string{"{6F1D3C52-2B0E-4E57-9B1A-6C0F4B1D2A51}", "0.0.0", "2.1.6", "", "256", "", "OLDERVERSIONS"}},
		{"InstallExecuteSequence", []string{"RemoveExistingProducts"}},
	} {
		if rows := msiTable(t, msi, tt.table); !hasRow(rows, tt.row...) {
			t.Errorf("table %s has no row %q:\n%q", tt.table, tt.row, rows)
		}
	}
	// The feature may be advertised: no msidbFeatureAttributesDisallowAdvertise (8), and
	// no DISABLEADVTSHORTCUTS turning the shortcut into an ordinary one.
	for _, r := range msiTable(t, msi, "Feature") {
		if a, err := strconv.Atoi(r[len(r)-1]); r[0] == "Complete" && (err != nil || a&8 != 0) {
			t.Errorf("feature Complete has attributes %q, which disallow advertising", r[len(r)-1])
		}
	}
	if hasRow(msiTable(t, msi, "Property"), "DISABLEADVTSHORTCUTS") {
		t.Error("the package sets DISABLEADVTSHORTCUTS")
	}
}

// wine is a Wine prefix of the test's own.
type wine struct {
	t      *testing.T
	prefix string
}

func newWine(t *testing.T) *wine {
	t.Helper()
	w := &wine{t: t, prefix: t.TempDir()}
	run(t, nil, "scripts/wine.sh", "prefix", w.prefix) // leaves one wineserver running
	t.Cleanup(func() {
		// The prefix's wineserver goes before its folder is removed.
		cmd := exec.Command("wineserver", "-k")
		cmd.Env = append(os.Environ(), w.env()...)
		_ = cmd.Run()
		cmd = exec.Command("wineserver", "-w")
		cmd.Env = append(os.Environ(), w.env()...)
		_ = cmd.Run()
	})
	return w
}

func (w *wine) env() []string {
	return []string{"WINEPREFIX=" + w.prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml="}
}

func (w *wine) run(args ...string) string {
	w.t.Helper()
	return run(w.t, w.env(), "wine", args...)
}

// unix is the Linux path of a Windows path in the prefix (C: only).
func (w *wine) unix(win string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(win, `C:\`), `c:\`)
	return filepath.Join(w.prefix, "drive_c", filepath.FromSlash(strings.ReplaceAll(rest, `\`, "/")))
}

// registeredPath reads HKCU\Software\Svc\Svc Webwrapper path, "" when there is none.
func (w *wine) registeredPath() string {
	w.t.Helper()
	cmd := exec.Command("wine", "reg", "query", `HKCU\Software\Svc\Svc Webwrapper`, "/v", "path")
	cmd.Env = append(os.Environ(), w.env()...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(strings.TrimSpace(l), "    ", 3); len(f) == 3 && f[0] == "path" {
			return strings.TrimSpace(f[2])
		}
	}
	return ""
}

const appData = `C:\users\root\AppData\Roaming`

func TestInstallUpgradeRemove(t *testing.T) {
	dir7, msi7 := build(t, "7")
	dir8, msi8 := build(t, "8")
	w := newWine(t)
	userDir := strings.Replace(appData, `\root\`, `\`+wineUser(w)+`\`, 1)
	lnk := w.unix(userDir + `\Microsoft\Windows\Start Menu\Programs\Svc Webwrapper.lnk`)
	files := []string{"Svc.Client.WebWrapper.exe", "Svc.Client.WebWrapper.exe.config", "svcpipe.exe", "LICENSES.txt"}
	checkInstalled := func(winDir, from string) {
		t.Helper()
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(w.unix(winDir), f))
			want, _ := os.ReadFile(filepath.Join(from, "files", f))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("installed %s\\%s: %v, same as built %v", winDir, f, err, bytes.Equal(got, want))
			}
		}
		// [INSTALLDIR]: the folder ending in a backslash, to which integrators append
		// the program's name.
		if got := w.registeredPath(); !strings.EqualFold(got, winDir+`\`) {
			t.Errorf("HKCU\\Software\\Svc\\Svc Webwrapper path = %q, want %q", got, winDir+`\`)
		}
		// Wine makes an advertised shortcut an ordinary one to the component's key path
		// (Windows gives it the feature's descriptor instead, and no path).
		if b, err := os.ReadFile(lnk); err != nil || !bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(winDir+`\Svc.Client.WebWrapper.exe`))) {
			t.Errorf("the Start-menu shortcut does not start %s\\Svc.Client.WebWrapper.exe (%v)", winDir, err)
		}
		// The installed pipe client runs: its usage, exit status 2.
		if out, _ := w.start(winDir+`\svcpipe.exe`, "-h"); !strings.Contains(out, "svcpipe (-pid N | -path P)") {
			t.Errorf("the installed svcpipe.exe -h printed %q", out)
		}
	}
	checkGone := func(winDir string, filesToo bool) {
		t.Helper()
		for _, f := range files {
			if !filesToo {
				break
			}
			if _, err := os.Stat(filepath.Join(w.unix(winDir), f)); !os.IsNotExist(err) {
				t.Errorf("%s\\%s after removal: %v, want it gone", winDir, f, err)
			}
		}
		if got := w.registeredPath(); got != "" {
			t.Errorf("path after removal = %q, want none", got)
		}
		if _, err := os.Stat(lnk); !os.IsNotExist(err) {
			t.Errorf("shortcut after removal: %v, want it gone", err)
		}
	}

	// The default folder: %AppData%\Svc\Svc Webwrapper\<version>, path written at install.
	v7 := userDir + `\Svc\Svc Webwrapper\2.1.5.7`
	v8 := userDir + `\Svc\Svc Webwrapper\2.1.5.8`
	w.run("msiexec", "/i", msi7, "/qn")
	checkInstalled(v7, dir7)

	// The program's first start keeps path in the installer's form. It cannot open its
	// window here (no Edge or Chrome under Wine: exit status 1), but it writes path
	// before it looks for a browser.
	if out, code := w.start(v7 + `\Svc.Client.WebWrapper.exe`); code != 1 || !strings.Contains(out, "neither Microsoft Edge nor Google Chrome is installed") {
		t.Errorf("the installed program's start under Wine: status %d, output %q; want status 1, no browser", code, out)
	}
	checkInstalled(v7, dir7)

	// A newer build replaces it: one folder, the new one, and path moves there.
	w.run("msiexec", "/i", msi8, "/qn")
	checkInstalled(v8, dir8)
	if _, err := os.Stat(w.unix(v7)); !os.IsNotExist(err) {
		t.Errorf("%s after the upgrade: %v, want it gone", v7, err)
	}
	w.run("msiexec", "/x", msi8, "/qn")
	checkGone(v8, true)
	if _, err := os.Stat(w.unix(v8)); !os.IsNotExist(err) {
		t.Errorf("%s after removal: %v, want it gone", v8, err)
	}

	// INSTALLDIR puts it elsewhere.
	custom := `C:\Programs\EHR\Webwrapper`
	w.run("msiexec", "/i", msi7, "INSTALLDIR="+custom, "/qn")
	checkInstalled(custom, dir7)
	// Wine's msiexec /x resolves the folder from the package's default, not from where
	// INSTALLDIR put it, and leaves those files (Windows Installer removes them where it
	// installed them); registry value and shortcut go (docs/webwrapper.md, "Under Wine").
	w.run("msiexec", "/x", msi7, "/qn")
	checkGone(custom, false)
}

// start runs a program in the prefix and returns its output and exit status. It has no
// display: the wrapper that finds no browser tells the person in a message box, which
// waits for someone to press OK on a display, and returns at once under Wine without
// one. The box itself is webwrapper/alert's TestShowMessageBox, on test.sh's Xvfb.
func (w *wine) start(args ...string) (string, int) {
	w.t.Helper()
	cmd := exec.Command("wine", args...)
	cmd.Env = append(os.Environ(), append(w.env(), "DISPLAY=", "WAYLAND_DISPLAY=")...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		w.t.Fatalf("wine %s: %v", strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// installed reads the values of HKCU\Software\Svc\Svc Webwrapper.
func (w *wine) installed() map[string]string {
	w.t.Helper()
	cmd := exec.Command("wine", "reg", "query", `HKCU\Software\Svc\Svc Webwrapper`)
	cmd.Env = append(os.Environ(), w.env()...)
	cmd.WaitDelay = 10 * time.Second
	out, _ := cmd.Output()
	values := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(strings.TrimSpace(l), "    ", 3); len(f) == 3 {
			values[f[0]] = strings.TrimSpace(f[2])
		} else if len(f) == 2 { // an empty value
			values[f[0]] = ""
		}
	}
	return values
}

// TestInstallProperties: an IT department's silent install for its clinic. The MSI's
// public properties become the settings, kept by an upgrade that is given none and
// replaced by one that is given them; an address in the clear is refused; removal takes
// them.
func TestInstallProperties(t *testing.T) {
	_, msi7 := build(t, "7")
	_, msi8 := build(t, "8")
	w := newWine(t)
	check := func(when string, want map[string]string) {
		t.Helper()
		got := w.installed()
		for name, v := range want {
			if got[name] != v {
				t.Errorf("%s: HKCU\\Software\\Svc\\Svc Webwrapper %s = %q, want %q", when, name, got[name], v)
			}
		}
	}
	clinic := map[string]string{
		"AppUrl":     "https://ehr.clinic.example/app/signin",
		"AdfsUrl":    "https://gateway.clinic.example/app/directory/clinic/signin",
		"Culture":    "nb-NO",
		"UpdateSite": "https://downloads.clinic.example/webwrapper/",
	}
	w.run("msiexec", "/i", msi7, "/qn", "APPURL="+clinic["AppUrl"], "ADFSURL="+clinic["AdfsUrl"], "CULTURE=nb-NO", "UPDATESITE="+clinic["UpdateSite"])
	check("installed with the properties", clinic)

	w.run("msiexec", "/i", msi8, "/qn")
	check("upgraded without them", clinic)

	// Any build of 2.1.5 replaces the installed one: 7 over 8, with a new address.
	clinic["AppUrl"] = "https://ehr2.clinic.example/app/signin"
	w.run("msiexec", "/i", msi7, "/qn", "APPURL="+clinic["AppUrl"])
	check("upgraded with a new APPURL", clinic)

	for _, prop := range []string{"APPURL=http://ehr.clinic.example/app/signin", "ADFSURL=http://gateway.clinic.example/", "UPDATESITE=http://downloads.clinic.example/"} {
		if out, code := w.start("msiexec", "/i", msi8, "/qn", prop); code == 0 {
			t.Errorf("msiexec /i %s: status 0, want a refusal\n%s", prop, out)
		}
	}
	check("after the refused installs", clinic)

	w.run("msiexec", "/x", msi7, "/qn")
	if got := w.installed(); len(got) != 0 {
		t.Errorf("after removal HKCU\\Software\\Svc\\Svc Webwrapper holds %q, want nothing", got)
	}
}

// wineUser is the prefix's user name, the name of its folder under C:\users.
func wineUser(w *wine) string {
	entries, _ := os.ReadDir(filepath.Join(w.prefix, "drive_c", "users"))
	for _, e := range entries {
		if e.IsDir() && e.Name() != "Public" && e.Name() != "public" {
			return e.Name()
		}
	}
	return "root"
}
