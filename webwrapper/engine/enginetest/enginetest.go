// Package enginetest is a fake engine.Engine for the unit tests of the wrapper's packages:
// it records what was asked of the window and lets the test answer page calls and emit
// host events.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/partnergate/partnergate/webwrapper/engine"
)

// Call is one recorded page API call.
type Call struct {
	Fn   string
	Args []any
}

// Handler answers a page API call: its result (marshalled to JSON and decoded into the
// caller's result, as a real page's would be) or an error (a *engine.PageError for a
// rejection).
type Handler func(args []any) (any, error)

// Engine is the fake. The zero value is not usable; make one with New.
type Engine struct {
	mu        sync.Mutex
	started   *engine.Options
	calls     []Call
	handlers  map[string]Handler
	navigated []string
	minimized bool
	restores  int
	bounds    engine.Bounds
	maximized bool
	cookies   []*http.Cookie
	events    chan engine.Event
	closed    chan struct{}
	closeOnce sync.Once
}

// New returns a fake whose event channel holds up to 64 events.
func New() *Engine {
	return &Engine{
		handlers: map[string]Handler{},
		events:   make(chan engine.Event, 64),
		closed:   make(chan struct{}),
	}
}

// Handle sets the answer to calls of fn; a call without a handler fails.
func (e *Engine) Handle(fn string, h Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handlers[fn] = h
}

// Emit sends a host event as the page would; data is marshalled to JSON.
func (e *Engine) Emit(name string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("enginetest: marshalling event data: %v", err))
	}
	e.events <- engine.Event{Name: name, Data: raw}
}

// Start records o; it fails when called twice.
func (e *Engine) Start(_ context.Context, o engine.Options) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started != nil {
		return errors.New("enginetest: started twice")
	}
	e.started = &o
	e.bounds, e.maximized = o.Bounds, o.Maximized
	return nil
}

// Started returns the options of Start, or nil before it.
func (e *Engine) Started() *engine.Options {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// Call records the call and answers it with the handler for fn.
func (e *Engine) Call(ctx context.Context, fn string, args []any, result any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	e.calls = append(e.calls, Call{Fn: fn, Args: args})
	h := e.handlers[fn]
	e.mu.Unlock()
	if h == nil {
		return fmt.Errorf("enginetest: no handler for %s", fn)
	}
	v, err := h(args)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("enginetest: marshalling result of %s: %w", fn, err)
	}
	return json.Unmarshal(raw, result)
}

// Calls returns the recorded calls in order.
func (e *Engine) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

// Events returns the channel Emit sends on.
func (e *Engine) Events() <-chan engine.Event { return e.events }

// Navigate records url.
func (e *Engine) Navigate(_ context.Context, url string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.navigated = append(e.navigated, url)
	return nil
}

// Navigated returns the URLs of Navigate in order.
func (e *Engine) Navigated() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.navigated...)
}

// Minimize marks the window minimized.
func (e *Engine) Minimize(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.minimized = true
	return nil
}

// Restore marks the window restored and counts the call.
func (e *Engine) Restore(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.minimized = false
	e.restores++
	return nil
}

// Minimized reports whether the window is minimized, and how often Restore was called.
func (e *Engine) Minimized() (minimized bool, restores int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.minimized, e.restores
}

// SetBounds sets what Bounds reports, as if the user had moved the window.
func (e *Engine) SetBounds(b engine.Bounds, maximized bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bounds, e.maximized = b, maximized
}

// Bounds reports the bounds of Start or SetBounds.
func (e *Engine) Bounds(context.Context) (engine.Bounds, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bounds, e.maximized, nil
}

// Closed is closed by Close, as if the user had closed the window.
func (e *Engine) Closed() <-chan struct{} { return e.closed }

// Close closes the window; calling it again does nothing.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() { close(e.closed) })
	return nil
}

var _ engine.Engine = (*Engine)(nil)

// SetCookies sets what Cookies returns.
func (e *Engine) SetCookies(cookies []*http.Cookie) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cookies = cookies
}

// UseSession takes cookies as what Cookies returns and records the start page (Options.URL)
// as navigated to.
func (e *Engine) UseSession(_ context.Context, cookies []*http.Cookie) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cookies = cookies
	if e.started != nil {
		e.navigated = append(e.navigated, e.started.URL)
	}
	return nil
}

// Cookies returns the cookies of SetCookies.
func (e *Engine) Cookies(context.Context) ([]*http.Cookie, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cookies, nil
}
