package web

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
)

// Bounds of password sign-in. Each attempt costs an argon2id hash of 19 MiB and tens of
// milliseconds of CPU, so unbounded attempts exhaust the machine and a password can be
// guessed at the machine's speed.
const (
	// DefaultSignInConcurrency is how many password checks run at once in one instance;
	// further attempts wait up to signInWait for a slot, then get 503. The slots are the
	// instance's own: they guard its CPU.
	DefaultSignInConcurrency = 2
	signInWait               = 2 * time.Second

	// Per signInWindow, an address may try signInPerAddress sign-ins, and one login name
	// signInPerLogin from one address; beyond either it gets 429 until its window ends.
	// The login name alone is never refused outright: a stranger who knows a user name
	// could then lock its owner out. Instead, past signInPerLogin attempts a window from
	// all addresses, each attempt for that name waits for its turn: signInBaseDelay after
	// the turn before it, twice as long for each further attempt, up to signInMaxDelay;
	// an attempt whose turn is further away than signInMaxDelay gets 429. The owner still
	// gets in, and guesses spread over many addresses are checked one at a time, at most
	// one per signInMaxDelay. The counts are the database's (store.CountSignIn), so every
	// instance behind the gateway keeps the same ones.
	signInWindow     = time.Minute
	signInPerAddress = 20
	signInPerLogin   = 10
	signInBaseDelay  = 250 * time.Millisecond
	signInMaxDelay   = 4 * time.Second
)

// signInLimits are the bounds above, as the store counts them.
var signInLimits = store.SignInLimits{Window: signInWindow, PerAddress: signInPerAddress, PerPair: signInPerLogin,
	PerLogin: signInPerLogin, BaseDelay: signInBaseDelay, MaxDelay: signInMaxDelay}

// signInGuard bounds the password checks this instance runs at once (a semaphore) and
// waits out an attempt's turn.
type signInGuard struct {
	slots chan struct{}
	wait  time.Duration
	sleep func(ctx context.Context, d time.Duration) bool // waits d; false when ctx ended first
}

func newSignInGuard(concurrency int) *signInGuard {
	return &signInGuard{slots: make(chan struct{}, concurrency), wait: signInWait, sleep: sleepCtx}
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

// signInTurn counts a password attempt for login from the request's address, in the counts
// every instance shares, and waits for the attempt's turn. It reports ok when the attempt
// may check its password now. Otherwise retry is when it may be tried again (refused), or 0
// when the client went away while it waited; err is the database's failure, on which the
// attempt is refused too.
func (h *Handler) signInTurn(r *http.Request, login string) (ok bool, retry time.Duration, err error) {
	v, err := h.cfg.Store.CountSignIn(r.Context(), addrKey(clientAddr(r)), login, signInLimits)
	switch {
	case err != nil:
		return false, 0, err
	case !v.Allowed:
		return false, max(v.RetryAfter, time.Second), nil
	}
	return v.Wait <= 0 || h.signIns.sleep(r.Context(), v.Wait), 0, nil
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
