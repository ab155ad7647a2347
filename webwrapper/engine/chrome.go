package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// hostBinding is the page's host function (window.svcHost).
const hostBinding = "svcHost"

// debugPort is the DevTools port of the Debug setting (LIM-3).
const debugPort = "9223"

// splash is the first document of the window, titled title (the window's title until the
// application's page loads; "Loading" when empty). The app window opens on it, not on the
// application, so that window.svcHost exists before the application's scripts run; an
// --app window needs a real document (about:blank opens a tabbed window).
func splash(title string) string {
	if title == "" {
		title = "Loading"
	}
	doc := "<!doctype html><title>" + html.EscapeString(title) + "</title>"
	return "data:text/html;charset=utf-8," + url.PathEscape(doc)
}

// Chrome is the engine of the EoWebBrowser and WebViewBrowser settings: a Chromium-family
// browser (Chromium, Chrome, Edge) in --app mode, driven over the DevTools protocol with
// chromedp.
type Chrome struct {
	ctx         context.Context // the window's chromedp context; lives until Close
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc

	mu           sync.Mutex
	queue        []Event
	wake         chan struct{}
	events       chan Event
	closed       chan struct{}
	closeOnce    sync.Once
	stopOnce     sync.Once
	stopErr      error
	wasMaximized bool        // the window state before Minimize, for Restore
	sessionOps   chan string // signedIn / signedOut for keepSession; nil when not kept

	// The page's JavaScript worlds (execution contexts) as the browser announces them:
	// host events count, and page calls run, only in the service's origin.
	origin   string                               // the service's, from Options
	startURL string                               // Options.URL, which UseSession opens again
	targetID string                               // the window's target, whose id its main frame shares
	contexts map[runtime.ExecutionContextID]world // by id, the main worlds of the page's frames
	main     world                                // the main frame's main world; zero while there is none
}

// world is one main world (default execution context) of a frame of the page.
type world struct {
	uniqueID string // system-unique: an id may be reused by another renderer process
	origin   string
}

// NewChrome returns an engine that starts no browser before Start.
func NewChrome() *Chrome {
	return &Chrome{
		wake:   make(chan struct{}, 1),
		events: make(chan Event),
		closed: make(chan struct{}),
	}
}

// Start starts the browser with the window of o and opens o.URL. ctx bounds the start;
// the browser runs until Close.
func (c *Chrome) Start(ctx context.Context, o Options) error {
	if c.ctx != nil {
		return errors.New("starting browser: started already")
	}
	exe := o.Browser
	if exe == "" {
		var err error
		if exe, err = FindBrowser(o.PreferEdge); err != nil {
			return err
		}
	}
	service := o.ServiceURL
	if service == "" {
		service = o.URL
	}
	origin, err := OriginOf(service)
	if err != nil {
		return fmt.Errorf("starting browser: %w", err)
	}
	c.origin, c.contexts, c.startURL = origin, map[runtime.ExecutionContextID]world{}, o.URL
	actx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(ctx), allocatorOptions(exe, o)...)
	bctx, cancel := chromedp.NewContext(actx)
	c.ctx, c.cancel, c.cancelAlloc = bctx, cancel, cancelAlloc

	if err := c.start(ctx, o); err != nil {
		c.shutdown()
		return fmt.Errorf("starting browser %s: %w", exe, err)
	}
	return nil
}

func (c *Chrome) start(ctx context.Context, o Options) error {
	// The first Run starts the browser and must not carry ctx's deadline, which would
	// end the browser with it.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(c.ctx) }()
	select {
	case err := <-started:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	sctx, stop := c.scope(ctx)
	defer stop()

	if o.KeepSession && o.ProfileDir != "" {
		c.sessionOps = make(chan string, 16) // before Listen: onEvent reads it
	}
	c.targetID = string(chromedp.FromContext(c.ctx).Target.TargetID) // before Listen too
	if err := chromedp.Listen(c.ctx, c.onEvent); err != nil {
		return err
	}
	go c.pump()
	go c.watch()
	if c.sessionOps != nil {
		path := sessionPath(o.ProfileDir, o.SessionKey)
		if err := restoreSession(sctx, path); err != nil {
			return fmt.Errorf("restoring the kept session: %w", err)
		}
		go c.keepSession(path, c.sessionOps)
	}
	// A device sign-on's session replaces a kept one.
	if err := setCookies(sctx, c.origin, o.Cookies); err != nil {
		return fmt.Errorf("setting the device sign-on's session: %w", err)
	}
	// A binding without an execution context is added to every document the target
	// loads from now on, before the document's scripts run.
	if _, err := chromedp.Call(sctx, runtime.AddBinding, runtime.AddBindingParams{Name: hostBinding}); err != nil {
		return fmt.Errorf("adding window.%s: %w", hostBinding, err)
	}
	if o.Maximized {
		if err := c.setState(sctx, browser.WindowStateMaximized); err != nil {
			return err
		}
	}
	return chromedp.Do(sctx, chromedp.Navigate(o.URL))
}

// allocatorOptions are the browser's command line for o.
func allocatorOptions(exe string, o Options) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("app", splash(o.LoadingTitle)),
	}
	if o.ProfileDir != "" {
		opts = append(opts, chromedp.UserDataDir(o.ProfileDir))
	}
	if o.Bounds.Width > 0 && o.Bounds.Height > 0 {
		opts = append(opts,
			chromedp.Flag("window-position", fmt.Sprintf("%d,%d", o.Bounds.Left, o.Bounds.Top)),
			chromedp.WindowSize(o.Bounds.Width, o.Bounds.Height))
	}
	if o.Maximized {
		opts = append(opts, chromedp.Flag("start-maximized", true))
	}
	// The zoom scales the whole window, as the original's zoom did; the page sees it as
	// window.devicePixelRatio.
	if o.Zoom > 0 && o.Zoom != 1 {
		opts = append(opts, chromedp.Flag("force-device-scale-factor", strconv.FormatFloat(o.Zoom, 'f', -1, 64)))
	}
	if o.Language != "" {
		opts = append(opts, chromedp.Flag("lang", o.Language), chromedp.Flag("accept-lang", o.Language))
	}
	if o.Debug {
		// A port for DevTools clients, on the loopback address only; chromedp then
		// talks to the browser over the same websocket instead of a pipe.
		opts = append(opts, remote.WebSocket,
			chromedp.Flag("remote-debugging-port", debugPort),
			chromedp.Flag("remote-debugging-address", "127.0.0.1"))
	}
	// Chromium refuses to start its sandbox as root (a container, a test machine); a
	// normal user always keeps the sandbox.
	opts = append(opts, chromedp.Flag("no-sandbox", isRoot()))
	for _, f := range o.ExtraFlags {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

func isRoot() bool { return os.Geteuid() == 0 }

// scope is a context of the window that also ends with ctx, for one operation. Before
// Start it is no chromedp context, so the operation fails with chromedp's invalid context.
func (c *Chrome) scope(ctx context.Context) (context.Context, context.CancelFunc) {
	parent := c.ctx
	if parent == nil {
		parent = context.Background()
	}
	sctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(ctx, cancel)
	return sctx, func() { stop(); cancel() }
}

// fnName is what Call accepts as a page function's name.
var fnName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// callJS awaits window.svcApp[fn](...args) and settles with {ok, value} or {ok: false,
// error}, so that a rejection keeps the SvcAppError's members instead of becoming an
// exception text.
const callJS = `(async (fn, args) => {
  const app = window.svcApp;
  if (!app || typeof app[fn] !== "function") {
    return { ok: false, error: { code: "host_unavailable", message: "the page has no svcApp." + fn } };
  }
  try {
    return { ok: true, value: await app[fn](...args) };
  } catch (e) {
    const o = e && typeof e === "object" ? e : {};
    return { ok: false, error: {
      code: typeof o.code === "string" && o.code ? o.code : "page_error",
      message: String(o.message !== undefined ? o.message : e),
      fields: Array.isArray(o.fields) ? o.fields : [],
      status: typeof o.status === "number" ? o.status : 0,
    } };
  }
})`

// Call awaits window.svcApp.<fn>(...args) in the main world of the page the window shows,
// when that page is of the service's origin. A page of another origin, or none yet, is a
// *PageError with code host_unavailable, and the arguments never reach it; so is a
// service page without svcApp.<fn> (not loaded yet).
func (c *Chrome) Call(ctx context.Context, fn string, args []any, result any) error {
	if !fnName.MatchString(fn) {
		return fmt.Errorf("calling page: %q is not a function name", fn)
	}
	c.mu.Lock()
	main := c.main
	c.mu.Unlock()
	if main.uniqueID == "" || main.origin != c.origin {
		return &PageError{Code: "host_unavailable", Message: "the window shows no page of the service"}
	}
	if args == nil {
		args = []any{}
	}
	jsArgs, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("calling %s: encoding arguments: %w", fn, err)
	}
	jsFn, _ := json.Marshal(fn)
	sctx, stop := c.scope(ctx)
	defer stop()
	// The world checked above and no other: if the page has navigated meanwhile, the
	// call fails instead of running in the next page.
	inWorld := func(p *runtime.EvaluateParams) { p.UniqueContextID = main.uniqueID }
	raw, err := chromedp.Run(sctx, chromedp.Evaluate[[]byte](
		callJS+"("+string(jsFn)+","+string(jsArgs)+")", chromedp.EvalAwaitPromise, inWorld))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("calling %s: %w", fn, ctx.Err())
		}
		return fmt.Errorf("calling %s: %w", fn, err)
	}
	var reply struct {
		OK    bool            `json:"ok"`
		Value json.RawMessage `json:"value"`
		Error *PageError      `json:"error"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return fmt.Errorf("calling %s: reading reply: %w", fn, err)
	}
	if !reply.OK {
		if reply.Error == nil {
			return fmt.Errorf("calling %s: the page failed without a reason", fn)
		}
		return reply.Error
	}
	if result == nil || len(reply.Value) == 0 {
		return nil
	}
	if err := json.Unmarshal(reply.Value, result); err != nil {
		return fmt.Errorf("calling %s: decoding result: %w", fn, err)
	}
	return nil
}

// onEvent runs in chromedp's read loop, so it only records and queues. The browser
// announces a world before any script runs in it, so a host event's world is known when
// the event comes.
func (c *Chrome) onEvent(ev any) {
	var b *runtime.EventBindingCalled
	switch ev := ev.(type) {
	case *runtime.EventExecutionContextCreated:
		c.worldCreated(ev.Context)
		return
	case *runtime.EventExecutionContextDestroyed:
		c.mu.Lock()
		for id, w := range c.contexts {
			if w.uniqueID == ev.ExecutionContextUniqueID {
				delete(c.contexts, id)
			}
		}
		if c.main.uniqueID == ev.ExecutionContextUniqueID {
			c.main = world{}
		}
		c.mu.Unlock()
		return
	case *runtime.EventExecutionContextsCleared:
		c.mu.Lock()
		clear(c.contexts)
		c.main = world{}
		c.mu.Unlock()
		return
	case *runtime.EventBindingCalled:
		b = ev
	default:
		return
	}
	c.mu.Lock()
	from, known := c.contexts[b.ExecutionContextID]
	c.mu.Unlock()
	if b.Name != hostBinding || !known || from.origin != c.origin {
		return // another origin's page, or a world that is not a page's main one
	}
	var msg struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(b.Payload), &msg); err != nil || msg.Event == "" {
		return // not the application's event; the page ignores what the host throws anyway
	}
	c.mu.Lock()
	c.queue = append(c.queue, Event{Name: msg.Event, Data: msg.Data})
	c.mu.Unlock()
	if c.sessionOps != nil && (msg.Event == "signedIn" || msg.Event == "signedOut") {
		select {
		case c.sessionOps <- msg.Event:
		default: // sixteen sign-ins queued: the last ones decide
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// worldCreated records a frame's main world; other worlds (isolated ones, workers) are
// not the page's and are left out.
func (c *Chrome) worldCreated(d *runtime.ExecutionContextDescription) {
	var aux struct {
		FrameID   string `json:"frameId"`
		IsDefault bool   `json:"isDefault"`
	}
	if d == nil || len(d.AuxData) == 0 || json.Unmarshal(d.AuxData, &aux) != nil || !aux.IsDefault {
		return
	}
	w := world{uniqueID: d.UniqueID, origin: d.Origin}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.contexts[d.ID] = w
	if aux.FrameID == c.targetID {
		c.main = w
	}
}

// pump delivers queued events in order to whoever reads Events, until the window closes.
func (c *Chrome) pump() {
	for {
		c.mu.Lock()
		var next *Event
		if len(c.queue) > 0 {
			next = &c.queue[0]
		}
		c.mu.Unlock()
		if next == nil {
			select {
			case <-c.wake:
				continue
			case <-c.closed:
				return
			}
		}
		select {
		case c.events <- *next:
			c.mu.Lock()
			c.queue = c.queue[1:]
			c.mu.Unlock()
		case <-c.closed:
			return
		}
	}
}

// watch closes Closed when the window's target or the browser goes away.
func (c *Chrome) watch() {
	detached, err := chromedp.Detached(c.ctx)
	if err != nil {
		detached = nil
	}
	var lost chan struct{}
	if b := chromedp.FromContext(c.ctx).Browser; b != nil {
		lost = b.LostConnection
	}
	select {
	case <-detached:
	case <-lost:
	case <-c.ctx.Done():
	}
	c.closeOnce.Do(func() { close(c.closed) })
}

// Events delivers the page's host events (window.svcHost) in order.
func (c *Chrome) Events() <-chan Event { return c.events }

// UseSession sets cookies for the service's origin, as Start sets Options.Cookies, and
// opens the start page again.
func (c *Chrome) UseSession(ctx context.Context, cookies []*http.Cookie) error {
	sctx, stop := c.scope(ctx)
	defer stop()
	if err := setCookies(sctx, c.origin, cookies); err != nil {
		return fmt.Errorf("setting the device sign-on's session: %w", err)
	}
	if err := chromedp.Do(sctx, chromedp.Navigate(c.startURL)); err != nil {
		return fmt.Errorf("opening the start page: %w", err)
	}
	return nil
}

// Navigate opens url and waits for it to load.
func (c *Chrome) Navigate(ctx context.Context, url string) error {
	sctx, stop := c.scope(ctx)
	defer stop()
	if err := chromedp.Do(sctx, chromedp.Navigate(url)); err != nil {
		return fmt.Errorf("navigating: %w", err)
	}
	return nil
}

func (c *Chrome) window(ctx context.Context) (browser.GetWindowForTargetResult, error) {
	cc := chromedp.FromContext(ctx)
	if cc == nil || cc.Target == nil {
		return browser.GetWindowForTargetResult{}, errors.New("finding the window: the browser is not started")
	}
	w, err := chromedp.CallBrowser(ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: cc.Target.TargetID})
	if err != nil {
		return w, fmt.Errorf("finding the window: %w", err)
	}
	return w, nil
}

func (c *Chrome) setState(ctx context.Context, state browser.WindowState) error {
	w, err := c.window(ctx)
	if err != nil {
		return err
	}
	_, err = chromedp.CallBrowser(ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{
		WindowID: w.WindowID, Bounds: &browser.Bounds{WindowState: state},
	})
	if err != nil {
		return fmt.Errorf("setting the window %s: %w", state, err)
	}
	return nil
}

// browserPID is the browser's process id, whose windows the desktop calls are about; 0
// before Start.
func (c *Chrome) browserPID() int {
	if c.ctx == nil {
		return 0
	}
	if cc := chromedp.FromContext(c.ctx); cc != nil && cc.Browser != nil {
		if p := cc.Browser.Process(); p != nil {
			return p.Pid
		}
	}
	return 0
}

// Minimize minimizes the window, remembering whether it was maximized, and takes it out of
// the taskbar, as the original's hide did. What the desktop answers to the latter does not
// fail the call: the window is minimised.
func (c *Chrome) Minimize(ctx context.Context) error {
	sctx, stop := c.scope(ctx)
	defer stop()
	w, err := c.window(sctx)
	if err != nil {
		return err
	}
	if w.Bounds != nil && w.Bounds.WindowState != browser.WindowStateMinimized {
		c.mu.Lock()
		c.wasMaximized = w.Bounds.WindowState == browser.WindowStateMaximized
		c.mu.Unlock()
	}
	if err := c.setState(sctx, browser.WindowStateMinimized); err != nil {
		return err
	}
	if pid := c.browserPID(); pid != 0 {
		_ = nativeHide(pid)
	}
	return nil
}

// Restore puts the window back in the taskbar, restores it to its state before Minimize
// and brings it to the front, active, as the original's Restore did.
func (c *Chrome) Restore(ctx context.Context) error {
	sctx, stop := c.scope(ctx)
	defer stop()
	pid := c.browserPID()
	if pid != 0 {
		_ = nativeShow(pid)
	}
	state := browser.WindowStateNormal
	c.mu.Lock()
	if c.wasMaximized {
		state = browser.WindowStateMaximized
	}
	c.mu.Unlock()
	// A minimized window must become normal before it can take another state.
	if err := c.setState(sctx, browser.WindowStateNormal); err != nil {
		return err
	}
	if state != browser.WindowStateNormal {
		if err := c.setState(sctx, state); err != nil {
			return err
		}
	}
	if _, err := chromedp.Call(sctx, page.BringToFront, cdp.Empty{}); err != nil {
		return fmt.Errorf("bringing the window to the front: %w", err)
	}
	if pid != 0 {
		_ = nativeFront(pid)
	}
	return nil
}

// Bounds reads the window's bounds (the restored bounds while minimized) and whether it
// is maximized.
func (c *Chrome) Bounds(ctx context.Context) (Bounds, bool, error) {
	sctx, stop := c.scope(ctx)
	defer stop()
	w, err := c.window(sctx)
	if err != nil {
		return Bounds{}, false, err
	}
	if w.Bounds == nil {
		return Bounds{}, false, errors.New("finding the window: no bounds")
	}
	b := Bounds{Width: int(w.Bounds.Width), Height: int(w.Bounds.Height)}
	if w.Bounds.Left != nil {
		b.Left = int(*w.Bounds.Left)
	}
	if w.Bounds.Top != nil {
		b.Top = int(*w.Bounds.Top)
	}
	return b, w.Bounds.WindowState == browser.WindowStateMaximized, nil
}

// Closed is closed when the window or the browser has gone away.
func (c *Chrome) Closed() <-chan struct{} { return c.closed }

// Close closes the browser gracefully, so that it saves its profile, and kills it when
// that takes longer than ten seconds. Calling it again returns the first call's error.
func (c *Chrome) Close() error {
	if c.ctx == nil {
		return nil
	}
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer cancel()
		err := chromedp.Cancel(ctx)
		c.shutdown()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		c.stopErr = err
	})
	return c.stopErr
}

func (c *Chrome) shutdown() {
	c.cancel()
	c.cancelAlloc()
	c.closeOnce.Do(func() { close(c.closed) })
}

var _ Engine = (*Chrome)(nil)
