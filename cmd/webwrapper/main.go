// Command webwrapper is the desktop wrapper (interface part B): it shows the service's web
// application in a browser window and lets desktop programs drive it through command-line
// arguments, an input.xml file and the pipe svcpipe.<pid> (docs/webwrapper.md).
//
// Usage:
//
//	webwrapper [-app-url U] [-browser P] [-profile D] [-browser-flag F]... [PROTOCOL ARGUMENTS]
//
// The flags are for tests and trials and come first; the rest is the protocol's: an
// input.xml path (the default provider) or key=value arguments (provider="Svc.Desktop.
// Arguments.Component, Svc.Desktop"). Exit status: 0 after close, or after handing the
// arguments to the running instance; 1 when the wrapper cannot start; 2 for an unknown
// provider or a bad flag.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/arguments"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/instance"
	"github.com/partnergate/partnergate/webwrapper/pipe"
	"github.com/partnergate/partnergate/webwrapper/provider"
	"github.com/partnergate/partnergate/webwrapper/signon"
	"github.com/partnergate/partnergate/webwrapper/update"
)

// version is the wrapper's four-part version, at least 2.1.4.19787 since the pipe needs
// that (VER-1); a release build sets the last part: -ldflags "-X main.version=2.1.5.<build>".
var version = "2.1.5.0"

// The names in the user's folders and the registry; the interface writes Svc for the
// vendor's name (Svc.Client.WebWrapper).
const (
	vendor  = "Svc"
	product = "Svc Webwrapper"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUnknown = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// flags are the command line's options for tests and trials.
type flags struct {
	appURL       string
	browser      string
	profile      string
	browserFlags multiFlag
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func run(ctx context.Context, argv []string, stderr io.Writer) int {
	var f flags
	fs := flag.NewFlagSet("webwrapper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.appURL, "app-url", "", "the first page, instead of the AppUrl setting")
	fs.StringVar(&f.browser, "browser", "", "the browser's executable, instead of searching for one")
	fs.StringVar(&f.profile, "profile", "", "the browser profile folder, instead of the user's")
	fs.Var(&f.browserFlags, "browser-flag", "a further browser flag, --name or --name=value (repeatable)")
	if err := fs.Parse(argv); err != nil {
		return exitUnknown
	}
	args := fs.Args()

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: finding the program: %v\n", err)
		return exitFailed
	}
	userPath, err := config.UserPath(vendor, product)
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: %v\n", err)
		return exitFailed
	}
	cfg, err := config.Load(config.AppPath(exe), userPath)
	if err == nil {
		err = cfg.LoadInstalled(vendor, product)
	}
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: %v\n", err)
		return exitFailed
	}
	prov, err := provider.ForArgs(args, cfg.String(config.ProtocolProvider))
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: %v\n", err)
		return exitUnknown
	}
	dir, err := instance.Dir(vendor, product)
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: %v\n", err)
		return exitFailed
	}
	primary, inst, err := instance.Acquire(ctx, dir, arguments.ForForwarding(args))
	if err != nil {
		fmt.Fprintf(stderr, "webwrapper: %v\n", err)
		return exitFailed
	}
	if !primary {
		return exitOK // the running instance has the arguments
	}
	defer inst.Close()

	logs := newLogs(stderr)
	defer logs.close()
	if cfg.Bool(config.Debug) {
		logs.enable()
	}
	logger := logs.logger
	for _, p := range cfg.Problems() {
		logger.Warn("configuration", "error", p)
	}
	if err := registerLocation(filepath.Dir(exe)); err != nil {
		logger.Warn("writing where the program is", "error", err)
	}
	w := &wrapper{cfg: cfg, flags: f, dir: dir, log: logger, logs: logs, prov: prov}
	return w.run(ctx, args, inst)
}

// wrapper is the running primary instance.
type wrapper struct {
	cfg   *config.Config
	flags flags
	dir   string // the instance folder: lock, profile
	log   *slog.Logger
	logs  *logs
	prov  provider.Provider

	mu     sync.Mutex
	bounds engine.Bounds // the window's last known bounds, saved at exit
	max    bool
	known  bool
}

func (w *wrapper) run(ctx context.Context, args []string, inst *instance.Instance) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts, warning := w.engineOptions()
	if warning != "" {
		w.log.Warn(warning)
	}
	opts.SessionKey = sessionKey(args, w.external())
	if c := startCulture(args); c != "" {
		opts.Language = c // the culture argument of the start that opens the window
	}
	var signOutURL string
	if adfs := strings.TrimSpace(w.cfg.String(config.AdfsUrl)); adfs != "" && w.flags.appURL == "" {
		// Directory sign-in: the window starts at the directory's sign-in with the
		// external user as its signon (the provider's login hint), and signs out there.
		opts.URL, signOutURL = adfsURL(adfs, "signon", startSignon(args, w.external())), adfsURL(adfs, "signout", "1")
	}
	opts.URL = cultureURL(opts.URL, opts.Language)
	eng, err := w.openWindow(ctx, opts)
	if err != nil {
		w.log.Error("starting the browser", "error", err)
		return exitFailed
	}
	a := app.New(eng, app.Options{
		Version:        version,
		MinimizeOnExit: w.cfg.Bool(config.MinimizeOnExit),
		Relaunch:       func(ctx context.Context) (engine.Engine, error) { return w.openWindow(ctx, w.reopenOptions(opts)) },
		Links:          w.links(),
		External:       w.external(),
		SignOutURL:     signOutURL,
		Logger:         w.log,
		EnableLog:      w.logs.enable,
	})
	runDone := make(chan struct{})
	go func() { defer close(runDone); a.Run(ctx) }()

	srv, err := pipe.Listen(os.Getpid())
	if err != nil {
		w.log.Error("opening the pipe", "error", err)
		cancel()
		<-runDone
		w.shutdown(a)
		return exitFailed
	}
	pctx, stopPipe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(pctx, a.Do) }()
	w.log.Info("pipe open", "path", srv.Path())

	go w.apply(ctx, a, w.prov, args)
	go func() {
		for fwd := range inst.Args() {
			p, err := provider.ForArgs(fwd, w.cfg.String(config.ProtocolProvider))
			if err != nil {
				w.log.Warn("arguments of another start", "error", err)
				continue
			}
			w.apply(ctx, a, p, fwd)
		}
	}()
	go w.checkUpdate(ctx, a)
	go w.trackBounds(ctx, a)
	stopTray := startTray(ctx, a, w.log)

	select {
	case <-runDone:
	case <-ctx.Done():
		<-runDone
	}
	stopTray()
	// Run has returned, so no command is running: the pipe's last replies (close's) are
	// written before Serve returns.
	stopPipe()
	if err := <-served; err != nil {
		w.log.Warn("pipe", "error", err)
	}
	w.shutdown(a)
	return exitOK
}

// apply turns one command line into commands and queues them in order. A command line
// with an error runs nothing of it.
func (w *wrapper) apply(ctx context.Context, a *app.App, p provider.Provider, args []string) {
	cmds, warnings, err := p.Commands(args)
	for _, m := range warnings {
		w.log.Warn("arguments", "warning", m)
	}
	if err != nil {
		w.log.Error("arguments: nothing runs", "error", err)
		return
	}
	for _, c := range cmds {
		if _, _, err := a.Do(ctx, c); err != nil {
			w.log.Warn("command failed", "command", string(c.Name), "error", err)
		}
	}
}

// engineOptions are the window's options from the settings and the flags.
func (w *wrapper) engineOptions() (engine.Options, string) {
	e, warning := w.cfg.Engine()
	o := engine.Options{
		URL:        w.cfg.String(config.AppUrl),
		ProfileDir: filepath.Join(w.dir, "profile"),
		Maximized:  w.cfg.Bool(config.Maximized),
		Zoom:       w.cfg.Zoom(),
		Language:   w.cfg.String(config.Culture),
		Debug:      w.cfg.Bool(config.Debug),
		Browser:    w.flags.browser,
		PreferEdge: e == config.WebViewBrowser,
		ExtraFlags: w.flags.browserFlags,
		// The single sign-on keeps the session of the window's profile across relaunches.
		KeepSession: w.cfg.Bool(config.RememberLoggedInUser) || w.cfg.Bool(config.SignonWithWindowsUser),
	}
	if w.flags.appURL != "" {
		o.URL = w.flags.appURL
	}
	if w.flags.profile != "" {
		o.ProfileDir = w.flags.profile
	}
	left, okL := w.cfg.Int(config.Left)
	top, okT := w.cfg.Int(config.Top)
	width, okW := w.cfg.Int(config.Width)
	height, okH := w.cfg.Int(config.Height)
	if okL && okT && okW && okH && width > 0 && height > 0 {
		o.Bounds = engine.Bounds{Left: left, Top: top, Width: width, Height: height}
	}
	return o, warning
}

// reopenOptions opens the window again where it was, on the page it started with: the
// profile keeps the session.
func (w *wrapper) reopenOptions(o engine.Options) engine.Options {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.known {
		o.Bounds, o.Maximized = w.bounds, w.max
	}
	return o
}

func (w *wrapper) openWindow(ctx context.Context, o engine.Options) (engine.Engine, error) {
	eng := engine.NewChrome()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := eng.Start(sctx, o); err != nil {
		return nil, err
	}
	return eng, nil
}

// links are the single sign-on links beside user.config; RememberLoggedInUser off
// removes them.
func (w *wrapper) links() *signon.Store {
	path, err := config.UserPath(vendor, product)
	if err != nil {
		return nil
	}
	s := signon.Open(filepath.Join(filepath.Dir(path), signon.FileName))
	if !w.cfg.Bool(config.RememberLoggedInUser) {
		if err := s.Clear(); err != nil {
			w.log.Warn("removing the sign-on links", "error", err)
		}
		return nil
	}
	return s
}

// external is the operating-system user when SignonWithWindowsUser is on.
func (w *wrapper) external() string {
	if !w.cfg.Bool(config.SignonWithWindowsUser) {
		return ""
	}
	u, err := user.Current()
	if err != nil {
		w.log.Warn("finding the operating-system user", "error", err)
		return ""
	}
	return u.Username
}

// trackBounds reads the window's bounds now and then, since a window the user closed
// can no longer be asked at exit.
func (w *wrapper) trackBounds(ctx context.Context, a *app.App) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		w.readBounds(ctx, a)
		select {
		case <-ctx.Done():
			return
		case <-a.Done():
			return
		case <-t.C:
		}
	}
}

func (w *wrapper) readBounds(ctx context.Context, a *app.App) {
	eng := a.Window()
	if eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, max, err := eng.Bounds(ctx)
	if err != nil || b.Width <= 0 || b.Height <= 0 {
		return
	}
	w.mu.Lock()
	w.bounds, w.max, w.known = b, max, true
	w.mu.Unlock()
}

// shutdown saves the geometry and zoom (B-CFG-USER) and ends the browser.
func (w *wrapper) shutdown(a *app.App) {
	w.readBounds(context.Background(), a)
	w.mu.Lock()
	if w.known {
		w.cfg.SetInt(config.Left, w.bounds.Left)
		w.cfg.SetInt(config.Top, w.bounds.Top)
		w.cfg.SetInt(config.Width, w.bounds.Width)
		w.cfg.SetInt(config.Height, w.bounds.Height)
		w.cfg.SetBool(config.Maximized, w.max)
	}
	w.mu.Unlock()
	w.cfg.SetFloat(config.ZoomFactor, w.cfg.Zoom())
	if err := w.cfg.Save(); err != nil {
		w.log.Warn("saving the user settings", "error", err)
	}
	if eng := a.Window(); eng != nil {
		_ = eng.Close()
	}
}

// checkUpdate looks for a newer wrapper without delaying anything and shows the download
// link in the page's notice banner (VER-3).
func (w *wrapper) checkUpdate(ctx context.Context, a *app.App) {
	if !w.cfg.Bool(config.CheckForUpdates) {
		return
	}
	feed := update.FeedURL(w.cfg.String(config.UpdateSite), w.cfg.String(config.UpdatePath))
	r := <-update.Start(ctx, http.DefaultClient, feed, version, 30*time.Second)
	if r.Err != nil {
		w.log.Info("update check", "error", r.Err)
		return
	}
	w.log.Info("update check", "offered", r.Release.Version, "newer", r.Newer)
	if !r.Newer {
		return
	}
	text := fmt.Sprintf("Version %s of the desktop wrapper is available.", r.Release.Version)
	if err := a.Notice(ctx, text, r.Release.URL); err != nil {
		w.log.Warn("showing the update notice", "error", err)
	}
}

// logs is the wrapper's log: info and above to stderr; once enabled (Debug=True at start,
// or the pipe's log command later, as the original's undocumented log method), debug and
// above to stderr and to a new file in a folder under the temporary folder. Nothing logs a
// person's data: commands log their name and errors, whose texts never quote a value.
type logs struct {
	logger *slog.Logger
	level  slog.LevelVar
	out    *switchWriter
	once   sync.Once
}

// switchWriter writes to stderr, and to a file once one is set.
type switchWriter struct {
	mu     sync.Mutex
	stderr io.Writer
	file   *os.File
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		_, _ = s.file.Write(p)
	}
	return s.stderr.Write(p)
}

func newLogs(stderr io.Writer) *logs {
	l := &logs{out: &switchWriter{stderr: stderr}}
	l.level.Set(slog.LevelInfo)
	l.logger = slog.New(slog.NewTextHandler(l.out, &slog.HandlerOptions{Level: &l.level}))
	return l
}

// enable turns on debug logging and the log file, once.
func (l *logs) enable() {
	l.once.Do(func() {
		l.level.Set(slog.LevelDebug)
		dir := filepath.Join(os.TempDir(), product+" logs")
		name := fmt.Sprintf("webwrapper-%s-%d.log", time.Now().Format("20060102-150405"), os.Getpid())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			l.logger.Warn("log file", "error", err)
			return
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			l.logger.Warn("log file", "error", err)
			return
		}
		l.out.mu.Lock()
		l.out.file = f
		l.out.mu.Unlock()
		l.logger.Info("logging to a file", "path", f.Name())
	})
}

func (l *logs) close() {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	if l.out.file != nil {
		_ = l.out.file.Close()
		l.out.file = nil
	}
}

// startCulture is the culture argument of a start with the Arguments provider's keys
// (culture=nb-NO): the window's language, instead of the Culture setting.
func startCulture(args []string) string {
	c := ""
	for _, a := range args {
		if k, v, ok := arguments.Pair(a); ok && k == "culture" {
			c = strings.TrimSpace(v)
		}
	}
	return c
}

// startSignon is the external user a start signs on as: its signon argument, else the
// operating-system user with SignonWithWindowsUser, else "".
func startSignon(args []string, osUser string) string {
	user := osUser
	for _, a := range args {
		if k, v, ok := arguments.Pair(a); ok && strings.EqualFold(k, "signon") && strings.TrimSpace(v) != "" {
			user = strings.TrimSpace(v)
		}
	}
	return user
}

// adfsURL is the AdfsUrl setting with key=value added to its query, as the original
// appended signon=<user> and signout=1; an empty value adds nothing.
func adfsURL(adfs, key, value string) string {
	u, err := url.Parse(adfs)
	if err != nil || value == "" {
		return adfs
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// sessionKey names the kept session of the window after the external user this start
// signs on as (its signon argument, else the operating-system user with
// SignonWithWindowsUser), so that a start with another external user finds no session and
// asks for a sign-in, while the same user comes back signed in.
func sessionKey(args []string, osUser string) string {
	user := startSignon(args, osUser)
	if user == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.ToLower(user)))
	return hex.EncodeToString(sum[:8])
}
