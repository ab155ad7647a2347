package web

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bounds of password sign-in. Each attempt costs an argon2id hash of 19 MiB and tens of
// milliseconds of CPU, so unbounded attempts exhaust the machine and a password can be
// guessed at the machine's speed.
const (
	// DefaultSignInConcurrency is how many password checks run at once; further attempts
	// wait up to signInWait for a slot, then get 503.
	DefaultSignInConcurrency = 2
	signInWait               = 2 * time.Second

	// An address may try signInPerAddress sign-ins, and one login name signInPerLogin,
	// per signInWindow; beyond that they get 429 until the window ends. The login bound
	// stops a guesser spread over many addresses; the address bound one that tries many
	// names.
	signInWindow     = time.Minute
	signInPerAddress = 20
	signInPerLogin   = 10
	// signInMaxKeys bounds the counters kept: a flood of distinct addresses or names
	// cannot grow memory without end; past it every attempt is refused until windows end.
	signInMaxKeys = 10000
)

// signInGuard bounds concurrent password checks (a semaphore) and counts attempts per
// client address and per login name in fixed windows.
type signInGuard struct {
	slots chan struct{}
	wait  time.Duration
	now   func() time.Time

	mu     sync.Mutex
	counts map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newSignInGuard(concurrency int, now func() time.Time) *signInGuard {
	return &signInGuard{slots: make(chan struct{}, concurrency), wait: signInWait, now: now, counts: map[string]*window{}}
}

// allow counts one attempt for addr and login and reports whether both are within their
// bounds, and if not, when the caller may try again.
func (g *signInGuard) allow(addr, login string) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if len(g.counts) >= signInMaxKeys {
		for k, w := range g.counts {
			if now.Sub(w.start) >= signInWindow {
				delete(g.counts, k)
			}
		}
		if len(g.counts) >= signInMaxKeys {
			return false, signInWindow
		}
	}
	ok, retry := true, time.Duration(0)
	for _, c := range [...]struct {
		key   string
		limit int
	}{{"a\x00" + addr, signInPerAddress}, {"l\x00" + login, signInPerLogin}} {
		w := g.counts[c.key]
		if w == nil || now.Sub(w.start) >= signInWindow {
			w = &window{start: now}
			g.counts[c.key] = w
		}
		w.n++
		if w.n > c.limit {
			ok, retry = false, max(retry, w.start.Add(signInWindow).Sub(now))
		}
	}
	return ok, retry
}

// acquire takes a password-check slot, waiting at most g.wait; release gives it back.
func (g *signInGuard) acquire(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *signInGuard) release() { <-g.slots }

// clientAddr is the browser's address: the last X-Forwarded-For entry, which the gateway
// (Caddy's reverse_proxy, the only client of a loopback listener) appends from its own
// connection, else the connection's address. Only the last entry is taken: the ones before
// it are whatever the client sent.
func clientAddr(r *http.Request) string {
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		last := xff[len(xff)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
			return ip.String()
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
