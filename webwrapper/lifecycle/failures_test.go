package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/provider"
)

// shown records what the wrapper tells a person, in place of the message box or the
// desktop notification (alert.Show, whose own tests show them for real).
type shown struct {
	mu   sync.Mutex
	msgs []alert.Message
	seen chan struct{}
}

func newShown() *shown { return &shown{seen: make(chan struct{}, 10)} }

func (s *shown) show(_ context.Context, m alert.Message) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	s.seen <- struct{}{}
	return nil
}

// one is the one message shown, or fails the test.
func (s *shown) one(t *testing.T) alert.Message {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.msgs) != 1 {
		t.Fatalf("the person was told %d messages, want 1: %+v", len(s.msgs), s.msgs)
	}
	if s.msgs[0].Title != product {
		t.Errorf("title %q, want %q", s.msgs[0].Title, product)
	}
	return s.msgs[0]
}

// userSettings writes user.config with the settings (name, value pairs) in the test's
// user folders, and returns its path.
func userSettings(t *testing.T, kv ...string) string {
	t.Helper()
	path, err := config.UserPath(vendor, product)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(filepath.Dir(path), "none.config"), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg.Set(kv[i], kv[i+1])
	}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	return path
}

// noBrowser leaves the wrapper no browser to find: PATH is an empty folder (Windows'
// App Paths and Program Files hold none under Wine either).
func noBrowser(t *testing.T) {
	t.Helper()
	empty := wintest.TempDir(t)
	t.Setenv("PATH", empty)
	for _, k := range []string{"ProgramFiles", "ProgramFiles(x86)"} {
		t.Setenv(k, empty)
	}
	if _, err := engine.FindBrowser(false); !errors.Is(err, engine.ErrNoBrowser) {
		t.Fatalf("FindBrowser with an empty PATH = %v, want ErrNoBrowser", err)
	}
}

// privateTemp makes the folder tmp under home the temporary folder of every platform's
// convention (TMPDIR, TMP, TEMP), where the Log setting's folder goes, and returns it.
func privateTemp(t *testing.T, home string) string {
	t.Helper()
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		t.Setenv(k, tmp)
	}
	return tmp
}

// The wrapper without a browser tells the person to install one, in the start's culture,
// naming the browsers it can use; with Log=True the failure is in the log file, in a
// folder under the temporary folder, which the message names.
func TestNoBrowserTold(t *testing.T) {
	home := userDirs(t)
	tmp := privateTemp(t, home)
	userSettings(t, config.Log, "True", config.Culture, "sv-SE", config.CheckForUpdates, "False")
	noBrowser(t)
	s := newShown()
	var stderr bytes.Buffer
	if code := Run(context.Background(), []string{"culture=de-DE"}, Options{Stderr: &stderr, Alert: s.show}); code != ExitFailed {
		t.Fatalf("Run without a browser = %d, want %d\n%s", code, ExitFailed, stderr.String())
	}
	m := s.one(t)
	browsers := strings.Join(engine.Browsers(runtime.GOOS), ", ")
	want := i18n.T("de", "webwrapper.alert.no_browser", "browsers", browsers)
	if !strings.HasPrefix(m.Text, want+"\n\n") {
		t.Errorf("the person was told\n%s\nwant the German text of the start's culture first:\n%s", m.Text, want)
	}
	logs, err := filepath.Glob(filepath.Join(tmp, product+" logs", "webwrapper-*.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("log files under %s: %v, %v; want one, Log=True", tmp, logs, err)
	}
	text, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "cannot start") || !strings.Contains(string(text), engine.ErrNoBrowser.Error()) {
		t.Errorf("the log file says\n%s\nwant the failure to start", text)
	}
	if tail := i18n.T("de", "webwrapper.alert.log", "folder", filepath.Dir(logs[0])); !strings.HasSuffix(m.Text, tail) {
		t.Errorf("the person was told\n%s\nwant it to end with where the log is: %s", m.Text, tail)
	}
}

// Without Log (and Debug) there is no log file, and the message names none.
func TestNoLogFileByDefault(t *testing.T) {
	home := userDirs(t)
	tmp := privateTemp(t, home)
	userSettings(t, config.Culture, "en-GB", config.CheckForUpdates, "False")
	noBrowser(t)
	s := newShown()
	if code := Run(context.Background(), nil, Options{Stderr: io.Discard, Alert: s.show}); code != ExitFailed {
		t.Fatalf("Run without a browser = %d, want %d", code, ExitFailed)
	}
	m := s.one(t)
	if !strings.HasPrefix(m.Text, i18n.T("en", "webwrapper.alert.no_browser", "browsers", strings.Join(engine.Browsers(runtime.GOOS), ", "))) {
		t.Errorf("the person was told\n%s\nwant the English text of the Culture setting", m.Text)
	}
	if strings.Contains(m.Text, product+" logs") {
		t.Errorf("the person was told of a log file without Log: %s", m.Text)
	}
	if _, err := os.Stat(filepath.Join(tmp, product+" logs")); !os.IsNotExist(err) {
		t.Errorf("the log folder without Log: %v, want none", err)
	}
}

// An unknown provider: the person is told to correct the name, where, and the names the
// wrapper knows, in the Culture setting's language; the program exits 2.
func TestUnknownProviderTold(t *testing.T) {
	userDirs(t)
	userSettings(t, config.Culture, "nb-NO")
	s := newShown()
	var stderr bytes.Buffer
	if code := Run(context.Background(), []string{`provider=Nope.Component, Nope`, "culture=de-DE"}, Options{Stderr: &stderr, Alert: s.show}); code != ExitUsage {
		t.Fatalf("Run(provider=Nope) = %d, want %d", code, ExitUsage)
	}
	m := s.one(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if want := i18n.T("nb", "webwrapper.alert.unknown_provider", "config", config.AppPath(exe)); !strings.HasPrefix(m.Text, want) {
		t.Errorf("the person was told\n%s\nwant the Norwegian text (the Culture setting: the unknown provider read no culture) first:\n%s", m.Text, want)
	}
	for _, name := range []string{provider.XML, provider.Arguments} {
		if !strings.Contains(m.Text, name) {
			t.Errorf("the person was told\n%s\nwant the known provider %q named", m.Text, name)
		}
	}
}

// A user.config that cannot be read: the person is told which file, and what removing it
// costs, in the desktop's language (the settings are what could not be read).
func TestUnreadableConfigTold(t *testing.T) {
	userDirs(t)
	path := userSettings(t)
	if err := os.WriteFile(path, []byte("<configuration><userSettings>"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newShown()
	if code := Run(context.Background(), nil, Options{Stderr: io.Discard, Alert: s.show}); code != ExitFailed {
		t.Fatalf("Run with a broken user.config = %d, want %d", code, ExitFailed)
	}
	m := s.one(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lang := i18n.Choose(alert.Language())
	if want := i18n.T(lang, "webwrapper.alert.config", "config", config.AppPath(exe), "user", path); !strings.HasPrefix(m.Text, want) {
		t.Errorf("the person was told\n%s\nwant first\n%s", m.Text, want)
	}
	if !strings.Contains(m.Text, path) {
		t.Errorf("the person was told\n%s\nwant the file %s named", m.Text, path)
	}
}

// A refused input.xml, at the first start or a later one: the person is told the file was
// kept and what to do, with the reason but none of the file's values, and the wrapper
// goes on. A refused command line says so too.
func TestRefusedStartTold(t *testing.T) {
	dir := wintest.TempDir(t)
	xml := filepath.Join(dir, "input.xml")
	if err := os.WriteFile(xml, []byte(`<exorinput><source_customerno>4711</source_customerno><firstname>Åsa</firstname><lastname>Ørnø</lastname><born>31.02.1950x</born></exorinput>`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newShown()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	w := &wrapper{cfg: testConfig(t, dir, `<add key="Culture" value="da-DK"/>`), dir: dir, log: log,
		tell: &teller{show: s.show, logs: newLogs(io.Discard), culture: []string{"da-DK"}}}
	p, err := provider.Lookup(provider.XML)
	if err != nil {
		t.Fatal(err)
	}
	start, err := p.Read([]string{xml})
	if err != nil {
		t.Fatal(err)
	}
	w.apply(context.Background(), nil, start) // nothing runs, so no app is needed
	<-s.seen
	m := s.one(t)
	if want := i18n.T("da", "webwrapper.alert.refused_xml", "file", xml); !strings.HasPrefix(m.Text, want) {
		t.Errorf("the person was told\n%s\nwant first\n%s", m.Text, want)
	}
	if !strings.Contains(m.Text, "born") {
		t.Errorf("the person was told\n%s\nwant the reason (born)", m.Text)
	}
	for _, v := range []string{"4711", "Åsa", "Ørnø", "31.02"} {
		if strings.Contains(m.Text, v) || strings.Contains(logged.String(), v) {
			t.Errorf("the message or the log holds the person's %q:\n%s\n%s", v, m.Text, logged.String())
		}
	}
	if _, err := os.Stat(xml); err != nil {
		t.Errorf("the refused file: %v, want it kept", err)
	}

	s.msgs = nil
	p, err = provider.Lookup(provider.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	start, err = p.Read([]string{"openworkout=abc"})
	if w.read(context.Background(), start, err) {
		t.Fatal("a command line with openworkout=abc counts, want it refused")
	}
	<-s.seen
	if m := s.one(t); !strings.HasPrefix(m.Text, i18n.T("da", "webwrapper.alert.refused_args")) || !strings.Contains(m.Text, "openworkout") {
		t.Errorf("the person was told\n%s\nwant the refused command line, naming openworkout", m.Text)
	}
}

// A later start that hands its command line over writes no log file, with Log on: an EHR
// starts the wrapper for every patient.
func TestHandOverWritesNoLog(t *testing.T) {
	home := userDirs(t)
	tmp := privateTemp(t, home)
	userSettings(t, config.Log, "True")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst := runningWrapper(t, ctx)
	s := newShown()
	if code := Run(ctx, []string{"culture=nb-NO"}, Options{Stderr: io.Discard, Alert: s.show}); code != ExitOK {
		t.Fatalf("second start = %d, want 0", code)
	}
	<-inst.Args()
	if _, err := os.Stat(filepath.Join(tmp, product+" logs")); !os.IsNotExist(err) {
		t.Errorf("the log folder after a hand-over: %v, want none", err)
	}
	if len(s.msgs) != 0 {
		t.Errorf("a hand-over told the person %+v", s.msgs)
	}
}
