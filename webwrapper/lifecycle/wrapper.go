package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/instance"
	"github.com/partnergate/partnergate/webwrapper/pipe"
	"github.com/partnergate/partnergate/webwrapper/provider"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// wrapper is the running (primary) instance.
type wrapper struct {
	cfg     *config.Config
	o       Options
	dir     string // the instance folder: lock, profile
	session string // the desktop session (localsock.Session), which has a profile of its own
	log     *slog.Logger
	logs    *logs
	tell    *teller

	mu     sync.Mutex
	bounds engine.Bounds // the window's last known bounds, saved at exit
	max    bool
	known  bool
}

func (w *wrapper) run(ctx context.Context, start provider.Start, inst *instance.Instance) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts, external, signOutURL := w.startOptions(start)
	links := w.links(ctx, opts.ServiceURL)
	device := w.device(links, opts.ServiceURL)
	if device != nil && external != "" {
		// The device sign-on signs the external user in before the window opens, so
		// before any command runs.
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		if opts.Cookies = device.SignIn(sctx, external); opts.Cookies != nil && signOutURL != "" {
			// Signed in already: the window opens on the service, not at the directory.
			opts.URL = cultureURL(opts.ServiceURL, opts.Language)
		}
		cancel()
	}
	eng, err := w.openWindow(ctx, opts)
	if err != nil {
		key, args := startFailure(err)
		return w.tell.fail(ctx, ExitFailed, key, err, args...)
	}
	a := app.New(eng, app.Options{
		Version:        w.o.Version,
		MinimizeOnExit: w.cfg.Bool(config.MinimizeOnExit),
		Relaunch:       func(ctx context.Context) (engine.Engine, error) { return w.openWindow(ctx, w.reopenOptions(opts)) },
		Links:          links,
		Device:         device,
		External:       external,
		SignOutURL:     signOutURL,
		Logger:         w.log,
		EnableLog:      w.logs.enable,
	})
	runDone := make(chan struct{})
	go func() { defer close(runDone); a.Run(ctx) }()

	srv, err := pipe.Listen(os.Getpid())
	if err != nil {
		cancel()
		<-runDone
		w.shutdown(a)
		return w.tell.fail(ctx, ExitFailed, "webwrapper.alert.cannot_start", fmt.Errorf("opening the pipe: %w", err))
	}
	srv.Logger = w.log
	pctx, stopPipe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(pctx, a.Do) }()
	w.log.Info("pipe open", "path", srv.Path())

	go w.apply(ctx, a, start)
	go func() {
		for args := range inst.Args() {
			w.applyLater(ctx, a, args)
		}
	}()
	go w.checkUpdate(ctx, a, opts.Language)
	go w.trackBounds(ctx, a)
	stopTray := startTray(ctx, a, w.log, i18n.Choose(opts.Language, alert.Language()))

	select {
	case <-runDone:
	case <-ctx.Done():
		<-runDone
	}
	stopTray()
	a.Wait() // a device sign-on being asked for is kept
	// Run has returned, so no command is running: the pipe's last replies (close's) are
	// written before Serve returns.
	stopPipe()
	if err := <-served; err != nil {
		w.log.Warn("pipe", "error", err)
	}
	w.shutdown(a)
	return ExitOK
}

// read logs what the provider ignored of a start's command line, and its refusal, which
// the person is told of too; it reports whether the start counts.
func (w *wrapper) read(ctx context.Context, s provider.Start, err error) bool {
	for _, m := range s.Warnings {
		w.log.Warn("arguments", "warning", m)
	}
	if err != nil {
		w.log.Error("arguments: nothing runs", "error", err)
		w.tell.refused(ctx, w.log, "", err)
		return false
	}
	return true
}

// applyLater applies the command line of a later start, read by the provider it names
// (or the configured one), exactly as the first start's. Every later start, with
// arguments or without, first brings the window to the front (out of the tray or the
// taskbar, restored, active), as the original's did: starting the program again is how a
// person or an EHR asks for it.
func (w *wrapper) applyLater(ctx context.Context, a *app.App, args []string) {
	if _, _, err := a.Do(ctx, command.Command{Name: command.Show}); err != nil {
		w.log.Warn("bringing the window to the front for another start", "error", err)
	}
	p, err := provider.ForArgs(args, w.cfg.String(config.ProtocolProvider))
	if err != nil {
		w.log.Warn("arguments of another start", "error", err)
		return
	}
	if s, err := p.Read(args); w.read(ctx, s, err) {
		w.apply(ctx, a, s)
	}
}

// apply queues a start's commands in order. Commands that fail to be read run nothing.
func (w *wrapper) apply(ctx context.Context, a *app.App, s provider.Start) {
	if s.Commands == nil {
		return
	}
	cmds, warnings, err := s.Commands()
	for _, m := range warnings {
		w.log.Warn("arguments", "warning", m)
	}
	if err != nil {
		w.log.Error("arguments: nothing runs", "error", err)
		w.tell.refused(ctx, w.log, s.XMLPath, err)
		return
	}
	for _, c := range cmds {
		if _, _, err := a.Do(ctx, c); err != nil {
			w.log.Warn("command failed", "command", string(c.Name), "error", err)
		}
	}
}

// startOptions are the first window's options for start, the external user it signs on
// as, and where the window signs out ("" for the page's own sign-out): the settings',
// with what start's provider read of its command line.
func (w *wrapper) startOptions(start provider.Start) (opts engine.Options, external, signOutURL string) {
	opts, warning := w.engineOptions()
	if warning != "" {
		w.log.Warn(warning)
	}
	external = w.external(start)
	opts.SessionKey = sessionKey(external)
	if start.Culture != "" {
		opts.Language = start.Culture // the culture of the start that opens the window
	}
	if adfs := strings.TrimSpace(w.cfg.String(config.AdfsUrl)); adfs != "" && w.o.AppURL == "" {
		// Directory sign-in: the window starts at the directory's sign-in with the
		// external user as its signon (the provider's login hint), and signs out there.
		opts.URL, signOutURL = adfsURL(adfs, "signon", external), adfsURL(adfs, "signout", "1")
	}
	opts.URL = cultureURL(opts.URL, opts.Language)
	return opts, external, signOutURL
}

// engineOptions are the window's options from the settings and the program's options.
func (w *wrapper) engineOptions() (engine.Options, string) {
	e, warning := w.cfg.Engine()
	o := engine.Options{
		URL:        w.cfg.String(config.AppUrl),
		ProfileDir: filepath.Join(w.dir, profileName(w.session)),
		Maximized:  w.cfg.Bool(config.Maximized),
		Zoom:       w.cfg.Zoom(),
		Language:   w.cfg.String(config.Culture),
		// The title the window has until the service's page comes, in the language the
		// wrapper's own messages are in.
		LoadingTitle: i18n.T(i18n.Choose(w.cfg.String(config.Culture), alert.Language()), "webwrapper.loading"),
		Debug:        w.cfg.Bool(config.Debug),
		Browser:      w.o.Browser,
		PreferEdge:   e == config.WebViewBrowser,
		ExtraFlags:   w.o.BrowserFlags,
		// The single sign-on keeps the session of the window's profile across relaunches.
		KeepSession: w.cfg.Bool(config.RememberLoggedInUser) || w.cfg.Bool(config.SignonWithWindowsUser),
	}
	if w.o.AppURL != "" {
		o.URL = w.o.AppURL
	}
	o.ServiceURL = o.URL // AdfsUrl may take URL's place; the service stays where AppUrl says
	if w.o.Profile != "" {
		o.ProfileDir = w.o.Profile
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

// profileName is the browser profile folder of a session: a browser hands a second start
// on one profile folder over to the browser already running on it, whose window is in
// the other session, so each session has its own ("profile" without a known session).
func profileName(session string) string {
	if session == "" {
		return "profile"
	}
	return "profile-" + session
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
// removes them, and ends their device sign-ons at the service at serviceURL.
func (w *wrapper) links(ctx context.Context, serviceURL string) *signon.Store {
	path, err := config.UserPath(vendor, product)
	if err != nil {
		return nil
	}
	s := signon.Open(filepath.Join(filepath.Dir(path), signon.FileName))
	if !w.cfg.Bool(config.RememberLoggedInUser) {
		if d := w.device(s, serviceURL); d != nil {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err = d.ForgetAll(ctx)
		} else {
			err = s.Clear()
		}
		if err != nil {
			w.log.Warn("removing the sign-on links", "error", err)
		}
		return nil
	}
	return s
}

// device is the device sign-on kept in links with the service at serviceURL; nil
// without links.
func (w *wrapper) device(links *signon.Store, serviceURL string) *signon.Device {
	if links == nil {
		return nil
	}
	origin, err := engine.OriginOf(serviceURL)
	if err != nil {
		w.log.Warn("no device sign-on", "error", err)
		return nil
	}
	computer, err := os.Hostname()
	if err != nil {
		computer = ""
	}
	return &signon.Device{Store: links, Client: &signon.Client{Service: origin}, Computer: computer, Log: w.log}
}

// external is the external user the start signs on as: its provider's signon, else the
// operating-system user with SignonWithWindowsUser, else none.
func (w *wrapper) external(s provider.Start) string {
	if u := strings.TrimSpace(s.SignOn); u != "" {
		return u
	}
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
