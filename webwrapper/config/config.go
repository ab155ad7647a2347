// Package config reads and writes the wrapper's settings in the files of the original
// .NET program, so that an installation's existing files keep working: the application
// config beside the executable (.NET appSettings) and the per-user user.config (.NET
// userSettings), where a blank user value takes the application value.
package config

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/htmlindex"
)

// Section is the section of the original program's settings class, <vendor>.Properties.
// Settings, under <applicationSettings> and <userSettings> as Visual Studio writes them.
const Section = "Svc.Properties.Settings"

// Config is the merged settings of one start.
type Config struct {
	app      map[string]string
	user     *userFile
	userPath string
}

// AppPath is the application config of the executable exe: its path with ".config"
// appended, as .NET names Svc.Client.WebWrapper.exe.config; the Linux binary follows the
// same rule (webwrapper.config).
func AppPath(exe string) string { return exe + ".config" }

// UserPath is the per-user user.config: on Windows under %LocalAppData%\<vendor>\, where
// the interface puts it (B-CFG-USER) and .NET keeps it, elsewhere under the user's config
// folder. The .NET path below the vendor's folder holds a hash of the install that cannot
// be recomputed, so the wrapper keeps its own: <vendor>\<product>\user.config.
func UserPath(vendor, product string) (string, error) {
	dir, err := os.UserConfigDir()
	if runtime.GOOS == "windows" {
		dir, err = os.UserCacheDir() // %LocalAppData%
	}
	if err != nil {
		return "", fmt.Errorf("finding the user config folder: %w", err)
	}
	return filepath.Join(dir, vendor, product, "user.config"), nil
}

// Load reads the application config at appPath and the user config at userPath; a
// missing file is empty (the first start makes user.config when it saves).
func Load(appPath, userPath string) (*Config, error) {
	c := &Config{app: map[string]string{}, user: &userFile{}, userPath: userPath}
	doc, err := readFile(appPath)
	if err != nil {
		return nil, err
	}
	for _, a := range doc.AppSettings {
		c.app[a.Key] = a.Value
	}
	// An exe.config made by Visual Studio also carries the defaults of the settings class.
	for _, sections := range []group{doc.UserSettings, doc.ApplicationSettings} {
		for _, s := range sections.Sections {
			if s.XMLName.Local != Section {
				continue
			}
			for _, v := range s.Settings {
				if _, ok := c.app[v.Name]; !ok {
					c.app[v.Name] = v.text()
				}
			}
		}
	}
	doc, err = readFile(userPath)
	if err != nil {
		return nil, err
	}
	c.user.sections = doc.UserSettings.Sections
	return c, nil
}

// String is the value of the setting name: the user value when not blank, else the
// application value when not blank, else the default.
func (c *Config) String(name string) string {
	if v := strings.TrimSpace(c.user.get(name)); v != "" {
		return v
	}
	if v := strings.TrimSpace(c.app[name]); v != "" {
		return v
	}
	return settings[name].def
}

// Bool reads a "True"/"False" setting (any case); a value that is neither takes the
// default (Problems reports it).
func (c *Config) Bool(name string) bool {
	b, err := parseBool(c.String(name))
	if err != nil {
		b, _ = parseBool(settings[name].def)
	}
	return b
}

// Int reads a whole-number setting; ok is false when it is blank or not a number.
func (c *Config) Int(name string) (n int, ok bool) {
	n, err := strconv.Atoi(c.String(name))
	return n, err == nil
}

// Zoom is ZoomFactor, 1 when blank or not a positive number. A comma is read as the
// decimal separator too, since the original wrote the number in the user's culture.
func (c *Config) Zoom() float64 {
	f, err := parseFloat(c.String(ZoomFactor))
	if err != nil || f <= 0 {
		return 1
	}
	return f
}

// Engine is BrowserEngine. InternetExplorer and unknown values give the default engine and
// a warning for the log.
func (c *Config) Engine() (e Engine, warning string) {
	v := c.String(BrowserEngine)
	switch {
	case strings.EqualFold(v, string(EoWebBrowser)):
		return EoWebBrowser, ""
	case strings.EqualFold(v, string(WebViewBrowser)):
		return WebViewBrowser, ""
	case strings.EqualFold(v, string(InternetExplorer)):
		return EoWebBrowser, "BrowserEngine InternetExplorer has no counterpart in this wrapper: using EoWebBrowser"
	}
	return EoWebBrowser, fmt.Sprintf("BrowserEngine %q is unknown: using EoWebBrowser", v)
}

// Problems lists the known settings whose values do not parse, for the log at start;
// each falls back to its default.
func (c *Config) Problems() []error {
	var errs []error
	for _, name := range sortedNames() {
		v := c.String(name)
		if v == "" {
			continue
		}
		var err error
		switch settings[name].kind {
		case kindBool:
			_, err = parseBool(v)
		case kindInt:
			_, err = strconv.Atoi(v)
		case kindFloat:
			_, err = parseFloat(v)
		case kindEngine:
			if _, w := c.Engine(); w != "" {
				err = errors.New(w)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("setting %s: %w", name, err))
		}
	}
	return errs
}

// Set sets the user value of name; Save writes it.
func (c *Config) Set(name, value string) { c.user.set(name, value) }

// SetBool sets a user value as "True" or "False", as .NET writes it.
func (c *Config) SetBool(name string, b bool) {
	c.Set(name, map[bool]string{true: "True", false: "False"}[b])
}

// SetInt sets a user value to n.
func (c *Config) SetInt(name string, n int) { c.Set(name, strconv.Itoa(n)) }

// SetFloat sets a user value to f, with a decimal point.
func (c *Config) SetFloat(name string, f float64) {
	c.Set(name, strconv.FormatFloat(f, 'f', -1, 64))
}

// Save writes user.config: every user value of the section (unknown ones kept) and the
// file's other sections. It writes a temporary file and renames it, so that a crash never
// leaves half a file.
func (c *Config) Save() error {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "    ")
	if err := c.user.marshal(enc); err != nil {
		return fmt.Errorf("encoding user config: %w", err)
	}
	buf.WriteByte('\n')
	dir := filepath.Dir(c.userPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating user config folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".user.config-*")
	if err != nil {
		return fmt.Errorf("saving user config: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.userPath)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("saving user config: %w", err)
	}
	return nil
}

func parseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%q is neither True nor False", v)
}

func parseFloat(v string) (float64, error) {
	return strconv.ParseFloat(strings.Replace(v, ",", ".", 1), 64)
}

// readFile parses a .NET config file; a missing file is an empty one.
func readFile(path string) (*configuration, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &configuration{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	doc, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	return doc, nil
}

func parse(data []byte) (*configuration, error) {
	// Visual Studio writes config files with a UTF-8 byte order mark.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		e, err := htmlindex.Get(label)
		if err != nil {
			return nil, fmt.Errorf("encoding %q: %w", label, err)
		}
		return e.NewDecoder().Reader(r), nil
	}
	var doc configuration
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}
