package web

import (
	"container/list"
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

	// Per signInWindow, an address may try signInPerAddress sign-ins, and one login name
	// signInPerLogin from one address; beyond either it gets 429 until its window ends.
	// The login name alone is never refused: a stranger who knows a user name could then
	// lock its owner out. Instead, past signInPerLogin attempts a minute from all
	// addresses, each attempt for that name waits before its check, twice as long as the
	// one before, from signInBaseDelay up to signInMaxDelay: the owner still gets in, a
	// guesser spread over many addresses is slowed.
	signInWindow     = time.Minute
	signInPerAddress = 20
	signInPerLogin   = 10
	signInBaseDelay  = 250 * time.Millisecond
	signInMaxDelay   = 4 * time.Second
	// signInMaxKeys bounds the windows kept. An address creates at most 1+2*signInPerAddress
	// of them a window (an attempt refused creates none), and when the bound is reached the
	// oldest window is dropped: a flood can at worst forget old counts, never refuse
	// everyone.
	signInMaxKeys = 10000
)

// signInGuard bounds concurrent password checks (a semaphore) and counts attempts in fixed
// windows per client address, per (login name, address) and per login name.
type signInGuard struct {
	slots   chan struct{}
	wait    time.Duration
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) bool // waits d; false when ctx ended first
	maxKeys int

	mu      sync.Mutex
	windows map[string]*list.Element // of *window
	order   *list.List               // oldest window start first
}

type window struct {
	key   string
	start time.Time
	n     int
}

func newSignInGuard(concurrency int, now func() time.Time) *signInGuard {
	return &signInGuard{slots: make(chan struct{}, concurrency), wait: signInWait, now: now, sleep: sleepCtx,
		maxKeys: signInMaxKeys, windows: map[string]*list.Element{}, order: list.New()}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// allow counts one attempt from addr for login. It refuses (ok false, with the time until
// the caller may try again) when the address or the (login, address) pair is over its
// bound, without creating any state; otherwise it counts the attempt and returns how long
// to wait before checking the password.
func (g *signInGuard) allow(addr, login string) (ok bool, retry, delay time.Duration) {
	addr = addrKey(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	// Windows are created and restarted at now and moved to the back, so the list is
	// ordered by start: the ended ones are at the front.
	for e := g.order.Front(); e != nil && now.Sub(e.Value.(*window).start) >= signInWindow; e = g.order.Front() {
		g.order.Remove(e)
		delete(g.windows, e.Value.(*window).key)
	}
	keyA, keyP, keyL := "a\x00"+addr, "p\x00"+login+"\x00"+addr, "l\x00"+login
	for _, c := range [...]struct {
		key   string
		limit int
	}{{keyA, signInPerAddress}, {keyP, signInPerLogin}} {
		if e := g.windows[c.key]; e != nil {
			if w := e.Value.(*window); w.n >= c.limit {
				retry = max(retry, w.start.Add(signInWindow).Sub(now))
			}
		}
	}
	if retry > 0 {
		return false, retry, 0
	}
	g.count(keyA, now)
	g.count(keyP, now)
	if n := g.count(keyL, now); n > signInPerLogin {
		delay = signInMaxDelay
		if over := n - signInPerLogin - 1; over < 8 {
			delay = min(signInBaseDelay<<over, signInMaxDelay)
		}
	}
	return true, 0, delay
}

// count adds one to key's window, creating it (and dropping the oldest window when full),
// and returns the new count.
func (g *signInGuard) count(key string, now time.Time) int {
	if e := g.windows[key]; e != nil {
		w := e.Value.(*window)
		w.n++
		return w.n
	}
	for g.order.Len() >= g.maxKeys {
		e := g.order.Front()
		g.order.Remove(e)
		delete(g.windows, e.Value.(*window).key)
	}
	g.windows[key] = g.order.PushBack(&window{key: key, start: now, n: 1})
	return 1
}

// addrKey is the unit an address is counted in: an IPv4 address, or the /64 of an IPv6
// address, since one IPv6 client usually holds a whole /64.
func addrKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
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
