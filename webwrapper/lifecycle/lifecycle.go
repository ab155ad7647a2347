// Package lifecycle runs the desktop wrapper from its start to its exit (docs/webwrapper.md,
// The program): it reads the settings and the start's command line through its protocol
// provider, hands the command line to the running wrapper or becomes it, opens the
// window and the pipe, queues the commands of this start, of later starts and of the
// pipe, keeps the window's place, checks for an update, and at the end saves the user
// settings and closes the browser. cmd/webwrapper parses its flags and calls Run.
package lifecycle

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/instance"
	"github.com/partnergate/partnergate/webwrapper/localsock"
	"github.com/partnergate/partnergate/webwrapper/provider"
)

// The names in the user's folders and the registry; the interface writes Svc for the
// vendor's name (Svc.Client.WebWrapper).
const (
	vendor  = "Svc"
	product = "Svc Webwrapper"
)

// Exit statuses of Run.
const (
	// ExitOK: after close or the window closed, or after handing the command line to
	// the running wrapper.
	ExitOK = 0
	// ExitFailed: the wrapper cannot start (no browser, unreadable settings).
	ExitFailed = 1
	// ExitUsage: an unknown protocol provider (or, in cmd/webwrapper, a bad flag).
	ExitUsage = 2
)

// Options are the program's own: what the build sets and the flags for tests and trials.
type Options struct {
	// Version is the wrapper's four-part version (VER-1), the pipe's version answer.
	Version string
	// AppURL, when set, is the first page instead of the AppUrl setting (and AdfsUrl).
	AppURL string
	// Browser is the browser's executable; empty searches for one.
	Browser string
	// Profile is the browser profile folder; empty is the user's, in the instance folder.
	Profile string
	// BrowserFlags are further browser flags, --name or --name=value.
	BrowserFlags []string
	// Stderr receives the log.
	Stderr io.Writer
	// Alert tells a person why the wrapper cannot start, or that it refused what a start
	// gave it; nil is alert.Show (a message box on Windows, a desktop notification
	// elsewhere). Tests record the messages instead.
	Alert func(context.Context, alert.Message) error
}

// Run runs the wrapper with args, the command line's protocol arguments, and returns its
// exit status. A second start of the same user hands args to the running wrapper and
// returns ExitOK at once; the first runs until close, the window closed (unless it stays
// in the tray) or ctx's end (the operating system's log-off, SIGTERM). When it cannot
// start, it tells the person why and what to do (Options.Alert) before it returns.
func Run(ctx context.Context, args []string, o Options) int {
	logs := newLogs(o.Stderr)
	defer logs.close()
	log := logs.logger
	t := &teller{show: o.Alert, logs: logs}
	if t.show == nil {
		t.show = alert.Show
	}
	exe, err := os.Executable()
	if err != nil {
		return t.fail(ctx, ExitFailed, "webwrapper.alert.cannot_start", fmt.Errorf("finding the program: %w", err))
	}
	userPath, err := config.UserPath(vendor, product)
	if err != nil {
		return t.fail(ctx, ExitFailed, "webwrapper.alert.cannot_start", err)
	}
	cfg, err := config.Load(config.AppPath(exe), userPath)
	if err == nil {
		err = cfg.LoadInstalled(vendor, product)
	}
	if err != nil {
		return t.fail(ctx, ExitFailed, "webwrapper.alert.config", err,
			"config", config.AppPath(exe), "user", userPath)
	}
	t.culture = []string{cfg.String(config.Culture)}
	// Log (the original's) or Debug: the log goes to a file too, once this start is the
	// running wrapper or fails (teller.fail), so that a failure to start is in it; a
	// start that only hands its command line over writes none.
	t.fileLog = cfg.Bool(config.Log) || cfg.Bool(config.Debug)
	prov, err := provider.ForArgs(args, cfg.String(config.ProtocolProvider))
	if err != nil {
		return t.fail(ctx, ExitUsage, "webwrapper.alert.unknown_provider", err, "config", config.AppPath(exe))
	}
	// The provider alone says what the start asks for; a command line it refuses counts
	// for nothing, and goes to the running wrapper as it is, whose log says why.
	start, readErr := prov.Read(args)
	handOver := args
	if readErr == nil {
		handOver = start.Args
		t.culture = []string{start.Culture, cfg.String(config.Culture)}
	}
	dir, err := instance.Dir(vendor, product)
	if err != nil {
		return t.fail(ctx, ExitFailed, "webwrapper.alert.cannot_start", err)
	}
	primary, inst, err := instance.Acquire(ctx, dir, handOver)
	if err != nil {
		return t.fail(ctx, ExitFailed, "webwrapper.alert.cannot_start", err)
	}
	if !primary {
		return ExitOK // the running instance has the command line
	}
	defer inst.Close()
	if t.fileLog {
		logs.enable()
	}

	for _, p := range cfg.Problems() {
		log.Warn("configuration", "error", p)
	}
	if err := registerLocation(filepath.Dir(exe)); err != nil {
		log.Warn("writing where the program is", "error", err)
	}
	w := &wrapper{cfg: cfg, o: o, dir: dir, session: localsock.Session(), log: log, logs: logs, tell: t}
	if !w.read(ctx, start, readErr) {
		start = provider.Start{}
	}
	return w.run(ctx, start, inst)
}
