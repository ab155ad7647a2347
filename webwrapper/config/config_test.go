package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
)

const appConfig = "\xef\xbb\xbf" + `<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <startup><supportedRuntime version="v4.0" sku=".NETFramework,Version=v4.8"/></startup>
  <appSettings>
    <add key="AppUrl" value="https://svc.example/app/signin"/>
    <add key="Debug" value="true"/>
    <add key="Culture" value="nb-NO"/>
    <add key="CheckForUpdates" value="True"/>
    <add key="ZoomFactor" value="1.25"/>
  </appSettings>
</configuration>
`

const userConfig = "\xef\xbb\xbf" + `<?xml version="1.0" encoding="utf-8"?>
<configuration>
    <userSettings>
        <Svc.Properties.Settings>
            <setting name="CheckForUpdates" serializeAs="String">
                <value>False</value>
            </setting>
            <setting name="ZoomFactor" serializeAs="String">
                <value></value>
            </setting>
            <setting name="Width" serializeAs="String">
                <value>1024</value>
            </setting>
            <setting name="Maximized" serializeAs="String">
                <value>FALSE</value>
            </setting>
            <setting name="LastPartner" serializeAs="String">
                <value>A &amp; B</value>
            </setting>
            <setting name="Recent" serializeAs="Xml">
                <value><ArrayOfString><string>x</string></ArrayOfString></value>
            </setting>
        </Svc.Properties.Settings>
        <Other.Settings>
            <setting name="Kept" serializeAs="String"><value>yes</value></setting>
        </Other.Settings>
    </userSettings>
</configuration>
`

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, app, user string) (*Config, string) {
	t.Helper()
	dir := wintest.TempDir(t)
	appPath := AppPath(filepath.Join(dir, "Svc.Client.WebWrapper.exe"))
	userPath := filepath.Join(dir, "user", "user.config")
	if app != "" {
		write(t, appPath, app)
	}
	if user != "" {
		if err := os.MkdirAll(filepath.Dir(userPath), 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, userPath, user)
	}
	c, err := Load(appPath, userPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, userPath
}

func TestDefaults(t *testing.T) {
	c, _ := load(t, "", "")
	for name, want := range map[string]string{
		BrowserEngine:         "EoWebBrowser",
		CheckForUpdates:       "True",
		Top:                   "",
		Maximized:             "True",
		MinimizeOnExit:        "True",
		UpdatePath:            "",
		ZoomFactor:            "",
		AdfsUrl:               "",
		AppUrl:                "http://localhost:8080/app/signin",
		Culture:               "",
		Debug:                 "False",
		Log:                   "False",
		ProtocolProvider:      "Svc.Desktop.Legacy3.Component, Svc.Desktop",
		RememberLoggedInUser:  "True",
		SignonWithWindowsUser: "False",
		DistributorName:       "",
		UpdateSite:            "http://localhost:8080/webwrapper/",
	} {
		if got := c.String(name); got != want {
			t.Errorf("String(%q) = %q, want %q", name, got, want)
		}
	}
	if _, ok := c.Int(Width); ok {
		t.Errorf("Int(Width) ok on a blank value")
	}
	if z := c.Zoom(); z != 1 {
		t.Errorf("Zoom() = %v, want 1", z)
	}
	if p := c.Problems(); len(p) != 0 {
		t.Errorf("Problems() = %v, want none", p)
	}
	if len(settings) != 20 {
		t.Errorf("%d settings, want the 17 of the spec's tables, DistributorName, Log and UpdateSite", len(settings))
	}
}

func TestMerge(t *testing.T) {
	c, _ := load(t, appConfig, userConfig)
	tests := []struct{ name, want string }{
		{AppUrl, "https://svc.example/app/signin"},         // application only
		{CheckForUpdates, "False"},                         // user wins
		{ZoomFactor, "1.25"},                               // blank user value takes the application's
		{Width, "1024"},                                    // user only
		{ProtocolProvider, settings[ProtocolProvider].def}, // neither
		{"LastPartner", "A & B"},                           // unknown, read anyway
	}
	for _, tt := range tests {
		if got := c.String(tt.name); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if !c.Bool(Debug) {
		t.Errorf("Bool(Debug) = false, want true from \"true\"")
	}
	if c.Bool(Maximized) {
		t.Errorf("Bool(Maximized) = true, want false from \"FALSE\"")
	}
	if c.Bool(CheckForUpdates) {
		t.Errorf("Bool(CheckForUpdates) = true, want the user's False")
	}
	if n, ok := c.Int(Width); !ok || n != 1024 {
		t.Errorf("Int(Width) = %d, %v; want 1024", n, ok)
	}
	if z := c.Zoom(); z != 1.25 {
		t.Errorf("Zoom() = %v, want 1.25", z)
	}
}

func TestBadValues(t *testing.T) {
	c, _ := load(t, `<configuration><appSettings>
		<add key="Debug" value="yes"/><add key="Top" value="x"/>
		<add key="ZoomFactor" value="1,5"/><add key="BrowserEngine" value="Gecko"/>
	</appSettings></configuration>`, "")
	if c.Bool(Debug) {
		t.Errorf("Bool(Debug) = true from \"yes\", want the default false")
	}
	if z := c.Zoom(); z != 1.5 {
		t.Errorf("Zoom() = %v, want 1.5 from a decimal comma", z)
	}
	var got []string
	for _, err := range c.Problems() {
		got = append(got, err.Error())
	}
	want := []string{
		`setting BrowserEngine: BrowserEngine "Gecko" is unknown: using EoWebBrowser`,
		`setting Debug: "yes" is neither True nor False`,
		`setting Top: strconv.Atoi: parsing "x": invalid syntax`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Problems() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEngine(t *testing.T) {
	tests := []struct {
		value string
		want  Engine
		warn  bool
	}{
		{"", EoWebBrowser, false},
		{"EoWebBrowser", EoWebBrowser, false},
		{"webviewbrowser", WebViewBrowser, false},
		{"InternetExplorer", EoWebBrowser, true},
		{"Gecko", EoWebBrowser, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c, _ := load(t, "", "")
			c.Set(BrowserEngine, tt.value)
			got, warning := c.Engine()
			if got != tt.want || (warning != "") != tt.warn {
				t.Errorf("Engine() with %q = %q, %q; want %q, warning %v", tt.value, got, warning, tt.want, tt.warn)
			}
		})
	}
}

func TestSaveRoundTrip(t *testing.T) {
	c, userPath := load(t, appConfig, userConfig)
	c.SetInt(Top, 40)
	c.SetInt(Width, 1280)
	c.SetBool(Maximized, true)
	c.SetFloat(ZoomFactor, 1.5)
	c.Set(UpdatePath, `beta <"x">`)
	if err := c.Save(); err != nil {
		t.Fatalf("Save: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(userPath))
	if len(entries) != 1 {
		t.Errorf("user folder holds %d files after Save, want only user.config", len(entries))
	}
	again, err := Load(AppPath(filepath.Join(filepath.Dir(filepath.Dir(userPath)), "Svc.Client.WebWrapper.exe")), userPath)
	if err != nil {
		t.Fatalf("Load after Save: %v", err)
	}
	for name, want := range map[string]string{
		Top: "40", Width: "1280", Maximized: "True", ZoomFactor: "1.5", UpdatePath: `beta <"x">`,
		CheckForUpdates: "False", "LastPartner": "A & B", AppUrl: "https://svc.example/app/signin",
	} {
		if got := again.String(name); got != want {
			t.Errorf("after round trip String(%q) = %q, want %q", name, got, want)
		}
	}
	data, _ := os.ReadFile(userPath)
	for _, want := range []string{
		`<setting name="Top" serializeAs="String">`,
		`<value><ArrayOfString><string>x</string></ArrayOfString></value>`,
		`<Other.Settings>`,
		`<setting name="Kept" serializeAs="String">`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("saved user.config lacks %s:\n%s", want, data)
		}
	}
	// A second save of the file as read is the same file.
	if err := again.Save(); err != nil {
		t.Fatalf("second Save: %v", err)
	}
	if data2, _ := os.ReadFile(userPath); string(data2) != string(data) {
		t.Errorf("second save differs:\n%s\nwant\n%s", data2, data)
	}
}

func TestFirstSaveMakesFolder(t *testing.T) {
	dir := wintest.TempDir(t)
	userPath := filepath.Join(dir, "Vendor", "Product", "user.config")
	c, err := Load(filepath.Join(dir, "none.config"), userPath)
	if err != nil {
		t.Fatal(err)
	}
	c.SetBool(MinimizeOnExit, false)
	if err := c.Save(); err != nil {
		t.Fatalf("Save: %v", err)
	}
	again, err := Load(filepath.Join(dir, "none.config"), userPath)
	if err != nil || again.Bool(MinimizeOnExit) {
		t.Errorf("after Save Bool(MinimizeOnExit) = %v, %v; want false", again.Bool(MinimizeOnExit), err)
	}
}

func TestEncodings(t *testing.T) {
	latin1 := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><configuration><appSettings>" +
		"<add key=\"DistributorName\" value=\"Tr\xe6ning AS\"/></appSettings></configuration>"
	c, _ := load(t, latin1, "")
	if got := c.String(DistributorName); got != "Træning AS" {
		t.Errorf("String(DistributorName) = %q, want %q", got, "Træning AS")
	}
}

func TestBrokenFile(t *testing.T) {
	dir := wintest.TempDir(t)
	write(t, filepath.Join(dir, "a.config"), "<configuration><appSettings>")
	if _, err := Load(filepath.Join(dir, "a.config"), filepath.Join(dir, "user.config")); err == nil {
		t.Errorf("Load of a broken file = nil error")
	}
}

func TestUserPath(t *testing.T) {
	p, err := UserPath("Vendor", "Product")
	if err != nil {
		t.Fatalf("no user config folder here (is HOME set?): %v", err)
	}
	if !strings.HasSuffix(p, filepath.Join("Vendor", "Product", "user.config")) {
		t.Errorf("UserPath() = %q", p)
	}
	// B-CFG-USER: under %localappdata%\<vendor>\ on Windows.
	if runtime.GOOS == "windows" {
		want := filepath.Join(os.Getenv("LOCALAPPDATA"), "Vendor", "Product", "user.config")
		if os.Getenv("LOCALAPPDATA") == "" || !strings.EqualFold(p, want) {
			t.Errorf("UserPath() = %q, want %q", p, want)
		}
	}
}

// An installation's .exe.config in the layout Visual Studio writes for the original's
// settings class: <applicationSettings> and <userSettings> under Svc.Properties.Settings.
func TestApplicationSettingsLayout(t *testing.T) {
	app := "\xef\xbb\xbf" + `<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <configSections>
    <sectionGroup name="applicationSettings" type="System.Configuration.ApplicationSettingsGroup, System">
      <section name="Svc.Properties.Settings" type="System.Configuration.ClientSettingsSection, System" requirePermission="false"/>
    </sectionGroup>
  </configSections>
  <applicationSettings>
    <Svc.Properties.Settings>
      <setting name="AppUrl" serializeAs="String"><value>https://svc.example/signin/</value></setting>
      <setting name="ProtocolProvider" serializeAs="String"><value>Svc.Desktop.Arguments.Component, Svc.Desktop</value></setting>
    </Svc.Properties.Settings>
    <Other.Properties.Settings>
      <setting name="Debug" serializeAs="String"><value>True</value></setting>
    </Other.Properties.Settings>
  </applicationSettings>
  <userSettings>
    <Svc.Properties.Settings>
      <setting name="MinimizeOnExit" serializeAs="String"><value>False</value></setting>
    </Svc.Properties.Settings>
  </userSettings>
</configuration>`
	c, _ := load(t, app, "")
	for name, want := range map[string]string{
		AppUrl: "https://svc.example/signin/", ProtocolProvider: "Svc.Desktop.Arguments.Component, Svc.Desktop",
		MinimizeOnExit: "False", Debug: "False",
	} {
		if got := c.String(name); got != want {
			t.Errorf("String(%q) = %q, want %q", name, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(appConfig))
	f.Add([]byte(userConfig))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parse(data)
	})
}

// TestConcurrentUse: the wrapper reads settings in its goroutines (the update check, the
// arguments of later starts) while its main goroutine sets and saves the window's geometry
// at shutdown; under the race detector, as ./test.sh runs it, an unguarded Config fails
// here. Every value set is read back whole.
func TestConcurrentUse(t *testing.T) {
	c, _ := load(t, appConfig, userConfig)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				switch i {
				case 0:
					c.SetInt(Width, 1000+j)
				case 1:
					if err := c.Save(); err != nil {
						t.Errorf("Save: %v", err)
						return
					}
				default:
					if w, ok := c.Int(Width); !ok || w < 1000 && w != 1024 {
						t.Errorf("Int(Width) = %d, %v while it is set, want a value that was set", w, ok)
						return
					}
					_ = c.Bool(CheckForUpdates)
				}
			}
		}()
	}
	wg.Wait()
	if w, _ := c.Int(Width); w != 1049 {
		t.Errorf("Int(Width) = %d after the sets, want 1049", w)
	}
}
