// Package app runs the wrapper's commands, from every protocol, one after another on the
// window's page: each command becomes a call of the page's JavaScript API (window.svcApp)
// or a window operation, and its answer the pipe's reply (docs/webwrapper.md). It follows
// the page's sign-in through the host events, so that a command needing a signed-in page
// waits for it, and it keeps the single sign-on links (B-SSO).
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// DefaultWait is how long a page call may take to answer: the original waited 30 seconds
// for asynchronous answers. The wait for a sign-in has no limit of its own: a command
// waits as long as the wrapper runs, whether or not its pipe client stays connected, as
// the original blocked until someone signed in and then ran every command.
const DefaultWait = 30 * time.Second

// errTimeout is the original's answer when the page did not answer in time; clients may
// compare the text.
var errTimeout = errors.New("Timeout. No response.") //lint:ignore ST1005 the original's text, which clients may compare

// Options configure an App.
type Options struct {
	// Version is the wrapper's four-part version, the answer to version.
	Version string
	// Wait bounds each page call; 0 is DefaultWait.
	Wait time.Duration
	// MinimizeOnExit keeps the program running when the user closes the window while
	// signed in; show, or a command needing the page, opens it again with Relaunch.
	MinimizeOnExit bool
	// Relaunch opens a new window on the same browser profile, so still signed in.
	Relaunch func(ctx context.Context) (engine.Engine, error)
	// Links are the single sign-on links; nil when RememberLoggedInUser is off.
	Links *signon.Store
	// Device is the device sign-on kept with the links, which the next start signs in
	// with; nil without one (RememberLoggedInUser off).
	Device *signon.Device
	// SignOutURL, when set (the AdfsUrl setting with signout=1), is where the window goes
	// to sign out: the directory sign-in's sign-out, which ends the service session and the
	// directory's. Empty: the page's own sign-out.
	SignOutURL string
	// External is the external user before any signon command: the operating-system user
	// when SignonWithWindowsUser is on, else empty.
	External string
	// Logger receives what went wrong; never a person's data.
	Logger *slog.Logger
	// EnableLog turns logging on (the pipe's log command, as the original's Debug
	// setting at run time); nil ignores the command.
	EnableLog func()
}

// App is the command queue on one window. Make it with New, then Run it.
type App struct {
	o    Options
	jobs chan job
	done chan struct{} // closed when Run returns

	mu       sync.Mutex
	eng      engine.Engine // nil while the window is closed (MinimizeOnExit)
	signedIn bool          // the page said signedIn and the account fits the external user
	account  account       // of the last signedIn
	changed  chan struct{} // closed and replaced when signedIn changes
	external string
	closedCh chan engine.Engine

	closing   chan struct{} // closed by close: waiting commands end, Run returns
	closeOnce sync.Once
	issuing   int        // device sign-ons being asked for, under mu
	issued    *sync.Cond // on mu, signalled when issuing drops to 0
	resumed   time.Time  // when resume last signed the window in again, under mu
}

type account struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

type job struct {
	ctx  context.Context
	cmd  command.Command
	done chan result
}

type result struct {
	reply    []byte
	hasReply bool
	err      error
}

// New returns the queue for the window eng, which Start has opened.
func New(eng engine.Engine, o Options) *App {
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{
		o:        o,
		jobs:     make(chan job),
		done:     make(chan struct{}),
		eng:      eng,
		changed:  make(chan struct{}),
		external: strings.TrimSpace(o.External),
		closedCh: make(chan engine.Engine, 1),
		closing:  make(chan struct{}),
	}
	a.issued = sync.NewCond(&a.mu)
	return a
}

// Run reads the page's events and runs the queued commands in order. It returns when ctx
// ends, after close, or when the user closed the window and the program is not to stay
// (not signed in, or MinimizeOnExit off).
func (a *App) Run(ctx context.Context) error {
	defer close(a.done)
	a.mu.Lock()
	eng := a.eng
	a.mu.Unlock()
	go a.watch(ctx, eng)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.closing:
			return nil
		case e := <-a.closedCh:
			a.mu.Lock()
			current, stay := e == a.eng, a.signedIn && a.o.MinimizeOnExit && a.o.Relaunch != nil
			if current {
				a.eng = nil
			}
			a.mu.Unlock()
			if !current {
				continue
			}
			if !stay {
				return nil
			}
			a.o.Logger.Info("window closed while signed in: still running, show opens it again")
		case j := <-a.jobs:
			// The command ends with its sender's context (the pipe's lasts until the
			// wrapper stops, whatever its client does), with Run, and at close, which
			// must not wait for a page call or a sign-in in progress.
			jctx, cancel := context.WithCancel(j.ctx)
			stopRun := context.AfterFunc(ctx, cancel)
			stopClose := closeCancels(a.closing, cancel)
			j.done <- a.run(jctx, j.cmd)
			stopClose()
			stopRun()
			cancel()
		}
	}
}

// closeCancels calls cancel when closing is closed, until the returned stop is called.
func closeCancels(closing <-chan struct{}, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-closing:
			cancel()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// Do runs c and returns its reply as the pipe writes it; its signature is the pipe's
// Handler. The commands that need no page (version, show, hide, close, log) run at once,
// even while others wait for a sign-in; the others are queued and run one at a time in
// the order they arrived. What a command left out (Command.Warnings) is logged.
func (a *App) Do(ctx context.Context, c command.Command) (reply []byte, hasReply bool, err error) {
	for _, w := range c.Warnings {
		a.o.Logger.Warn("command", "command", string(c.Name), "warning", w)
	}
	if !c.Queued() {
		if c.Name == command.Version {
			return []byte(a.o.Version), true, nil
		}
		select {
		case <-a.done:
			return nil, false, errors.New("the wrapper is closing")
		default:
		}
		r := a.now(ctx, c)
		return r.reply, r.hasReply, r.err
	}
	j := job{ctx: ctx, cmd: c, done: make(chan result, 1)}
	select {
	case a.jobs <- j:
	case <-a.done:
		return nil, false, errors.New("the wrapper is closing")
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	r := <-j.done
	return r.reply, r.hasReply, r.err
}

// Done is closed when Run has returned.
func (a *App) Done() <-chan struct{} { return a.done }

// Window returns the open window, nil while it is closed.
func (a *App) Window() engine.Engine {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.eng
}

// watch follows eng's host events until it closes, then tells Run.
func (a *App) watch(ctx context.Context, eng engine.Engine) {
	for {
		select {
		case ev := <-eng.Events():
			a.event(ctx, eng, ev)
		case <-eng.Closed():
			select {
			case a.closedCh <- eng:
			case <-a.done:
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

// event follows the sign-in state the page reports on eng.
func (a *App) event(ctx context.Context, eng engine.Engine, ev engine.Event) {
	switch ev.Name {
	case "signedIn":
		var d struct {
			Account account `json:"account"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			a.o.Logger.Warn("signedIn event without an account", "error", err)
		}
		a.mu.Lock()
		a.account = d.Account
		external := a.external
		a.mu.Unlock()
		fits := a.linkFits(d.Account)
		a.setSignedIn(fits)
		if fits && external != "" && d.Account.ID != 0 && a.o.Device != nil {
			// The page's sign-in asks for the device sign-on, which the wrapper gets with
			// the session's token: the page never sees it.
			a.mu.Lock()
			a.issuing++
			a.mu.Unlock()
			go func() {
				defer func() {
					a.mu.Lock()
					if a.issuing--; a.issuing == 0 {
						a.issued.Broadcast()
					}
					a.mu.Unlock()
				}()
				a.issue(ctx, eng, external, d.Account)
			}()
		}
	case "signedOut":
		var d struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(ev.Data, &d) // no reason: a sign-out, as the page said before it gave one
		a.mu.Lock()
		external := a.external
		a.account = account{}
		a.mu.Unlock()
		if d.Reason == "ended" {
			// The session ended by itself (its hours passed, the service let it go): the
			// link and its device sign-on stay, as the original's did, and the device
			// sign-on signs the window in again.
			a.setSignedIn(false)
			a.resume(ctx, eng, external)
			return
		}
		// Signing out ends the external user's link and its device sign-on, so that the
		// next sign-in links anew and the next start asks for the password. A device
		// sign-on still being asked for is ended with it, not kept after the sign-out.
		a.Wait()
		a.forget(ctx, external)
		a.setSignedIn(false)
	}
}

// resumeEvery bounds how often a window whose session ended is signed in again by the
// device sign-on: a session that ends at once again is the service's refusal, not a
// passing hour, and the person signs in with the password.
const resumeEvery = time.Minute

// resume signs eng in again with external's device sign-on, when there is one, after its
// session ended: the nurse who left the wrapper open overnight finds it signed in.
func (a *App) resume(ctx context.Context, eng engine.Engine, external string) {
	if a.o.Device == nil || external == "" {
		return
	}
	a.mu.Lock()
	if !a.resumed.IsZero() && time.Since(a.resumed) < resumeEvery {
		a.mu.Unlock()
		a.o.Logger.Info("the session ended again at once: sign in with the password")
		return
	}
	a.resumed = time.Now()
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.Wait)
	defer cancel()
	cookies := a.o.Device.SignIn(ctx, external)
	if len(cookies) == 0 {
		return
	}
	if err := eng.UseSession(ctx, cookies); err != nil {
		a.o.Logger.Warn("signing the window in again with the device sign-on", "error", err)
	}
}

// issue asks for the device sign-on of external's link to acc with eng's session.
func (a *App) issue(ctx context.Context, eng engine.Engine, external string, acc account) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.Wait)
	defer cancel()
	cookies, err := eng.Cookies(ctx)
	if err != nil {
		a.o.Logger.Warn("reading the session for the device sign-on", "error", err)
		return
	}
	a.o.Device.Issued(ctx, external, signon.Link{AccountID: acc.ID, Username: acc.Username, LinkedAt: time.Now().UTC()},
		signon.SessionToken(cookies))
}

// forget ends external's link and its device sign-on at the service.
func (a *App) forget(ctx context.Context, external string) {
	if external == "" {
		return
	}
	if a.o.Device != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.Wait)
		defer cancel()
		a.o.Device.Forget(ctx, external)
		return
	}
	if a.o.Links != nil {
		if err := a.o.Links.Forget(external); err != nil {
			a.o.Logger.Error("forgetting the sign-on link", "error", err)
		}
	}
}

// Wait waits for the device sign-ons being asked for, so that a wrapper ending right
// after a sign-in keeps the one it got.
func (a *App) Wait() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.issuing > 0 {
		a.issued.Wait()
	}
}

func (a *App) setSignedIn(v bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.signedIn == v {
		return
	}
	a.signedIn = v
	close(a.changed)
	a.changed = make(chan struct{})
}

// linkFits tells whether the page's account may serve the external user: without an
// external user or links, any; else the account linked to it, linking it at its first
// sign-in (B-SSO).
func (a *App) linkFits(acc account) bool {
	a.mu.Lock()
	external := a.external
	a.mu.Unlock()
	if external == "" || a.o.Links == nil || acc.ID == 0 {
		return true
	}
	l, ok, err := a.o.Links.Get(external)
	if err != nil {
		a.o.Logger.Error("reading the sign-on links", "error", err)
		return true
	}
	if ok {
		if l.AccountID != acc.ID {
			a.o.Logger.Warn("the page is signed in as another account than the external user's link: sign out and in again")
			return false
		}
		return true
	}
	if err := a.o.Links.Remember(external, signon.Link{AccountID: acc.ID, Username: acc.Username, LinkedAt: time.Now().UTC()}); err != nil {
		a.o.Logger.Error("remembering the sign-on link", "error", err)
	}
	return true
}

// now carries out a command that needs no page and does not wait for the queue.
func (a *App) now(ctx context.Context, c command.Command) result {
	switch c.Name {
	case command.Hide:
		if eng := a.Window(); eng != nil {
			return result{err: eng.Minimize(ctx)}
		}
		return result{}
	case command.Show:
		return result{err: a.front(ctx)}
	case command.Log:
		if a.o.EnableLog != nil {
			a.o.EnableLog()
		}
		return result{}
	case command.Close:
		a.close(ctx)
		return result{reply: []byte(`{"ok":true}`), hasReply: true}
	}
	return result{err: fmt.Errorf("command %s needs the queue", c.Name)}
}

// close signs out and forgets the external user's sign-on link, as the original's close
// did, so that the next start asks for the password; then it ends the commands waiting
// for a sign-in and makes Run return. A page that cannot sign out (closed, slow) does not
// keep the wrapper from closing.
func (a *App) close(ctx context.Context) {
	a.SignOut(ctx)
	a.closeOnce.Do(func() { close(a.closing) })
}

// SignOut signs the page out and forgets the external user's sign-on link and its device
// sign-on (the tray's "Sign out", and close), so that the next start asks for the
// password; the wrapper runs on, its window at the sign-in page.
func (a *App) SignOut(ctx context.Context) {
	a.mu.Lock()
	eng, signedIn, external := a.eng, a.signedIn || a.account.ID != 0, a.external
	a.mu.Unlock()
	if eng != nil && signedIn {
		cctx, cancel := context.WithTimeout(ctx, a.o.Wait)
		if a.o.SignOutURL != "" {
			if err := eng.Navigate(cctx, a.o.SignOutURL); err != nil {
				a.o.Logger.Warn("signing out at close", "error", callError(err, cctx))
			}
		} else if err := eng.Call(cctx, "signOut", nil, nil); err != nil {
			a.o.Logger.Warn("signing out at close", "error", callError(err, cctx))
		}
		cancel()
	}
	a.Wait() // a device sign-on being issued is ended with the rest
	a.forget(ctx, external)
	a.setSignedIn(false)
}

// run carries out one queued command.
func (a *App) run(ctx context.Context, c command.Command) result {
	if err := ctx.Err(); err != nil {
		return result{err: err}
	}
	if c.NeedsSignIn() {
		eng, err := a.waitSignedIn(ctx)
		if err != nil {
			return result{err: err}
		}
		if showsWindow[c.Name] {
			if err := a.front(ctx); err != nil {
				a.o.Logger.Warn("bringing the window to the front", "command", string(c.Name), "error", err)
			}
		}
		return a.call(ctx, eng, c)
	}
	if c.Name == command.SignOn {
		return result{err: a.signOn(c.Args["user"].(string))}
	}
	return result{err: fmt.Errorf("command %s does not go through the queue", c.Name)}
}

// showsWindow are the commands that show something in the window, which comes to the
// front for them (out of the tray or the taskbar, restored, active), as the original's
// did: a nurse who picks a patient in the EHR sees the wrapper answer.
var showsWindow = map[command.Name]bool{
	command.SelectPerson: true, command.OpenWorkout: true,
	command.QueryExercises: true, command.QueryWorkouts: true,
}

// front shows the window, opening it again when the user closed it.
func (a *App) front(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.eng == nil {
		if a.o.Relaunch == nil {
			return errors.New("the window is closed")
		}
		eng, err := a.o.Relaunch(ctx)
		if err != nil {
			return fmt.Errorf("opening the window: %w", err)
		}
		a.eng = eng
		go a.watch(context.WithoutCancel(ctx), eng)
		return nil
	}
	return a.eng.Restore(ctx)
}

// signOn makes user the external user (B-SSO). A page signed in as another account than
// the user's link no longer counts as signed in.
func (a *App) signOn(user string) error {
	a.mu.Lock()
	a.external = strings.TrimSpace(user)
	acc := a.account
	a.mu.Unlock()
	if acc.ID != 0 {
		a.setSignedIn(a.linkFits(acc))
	}
	return nil
}

// waitSignedIn returns the window once the page is signed in, bringing it to the front
// first. It waits as long as ctx lasts: the wrapper's run.
func (a *App) waitSignedIn(ctx context.Context) (engine.Engine, error) {
	for first := true; ; first = false {
		a.mu.Lock()
		ok, eng, changed := a.signedIn, a.eng, a.changed
		a.mu.Unlock()
		if ok && eng != nil {
			return eng, nil
		}
		if first || eng == nil {
			if err := a.front(ctx); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-changed:
		case <-eng.Closed():
			return nil, errors.New("the window was closed before anyone signed in")
		case <-a.closing:
			return nil, errors.New("the wrapper is closing")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Notice shows text with a download link in the page's notice banner once someone is
// signed in, since the banner belongs to the application, not to the sign-in page. It
// waits as long as ctx allows and does not hold up the queue.
func (a *App) Notice(ctx context.Context, text, url string) error {
	for {
		a.mu.Lock()
		ok, eng, changed := a.signedIn, a.eng, a.changed
		a.mu.Unlock()
		if ok && eng != nil {
			cctx, cancel := context.WithTimeout(ctx, a.o.Wait)
			defer cancel()
			if err := eng.Call(cctx, "showNotice", []any{text, url}, nil); err != nil {
				return callError(err, cctx)
			}
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-a.done:
			return errors.New("the wrapper is closing")
		}
	}
}
