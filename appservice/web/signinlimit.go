package web

import (
	"context"
	"net"
	"net/http"
	"strconv"
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

// turnRefusal is why admit turned a password check away, for the page to say in its words.
type turnRefusal int

const (
	refusedFailed  turnRefusal = iota // the database failed
	refusedLimited                    // too many attempts: Retry-After says when to try again
	refusedBusy                       // too many password checks at once
)

// refusalTexts are what a page says when admit refuses, by the event it refused and why.
var refusalTexts = map[string][3]string{
	"sign-in": {
		refusedFailed:  "Sign-in is not possible right now. Try again in a moment.",
		refusedLimited: "Too many sign-in attempts. Wait a minute, then try again.",
		refusedBusy:    "Sign-in is busy right now. Try again in a few seconds.",
	},
	"account creation": {
		refusedFailed:  "Your account could not be created right now; nothing was saved. Try again in a moment.",
		refusedLimited: "Too many attempts. Wait a minute, then try again.",
		refusedBusy:    "The service is busy right now. Try again in a few seconds.",
	},
}

// admit is the gate before a password is checked or hashed (sign-in, account creation):
// login's turn in the shared counts (signInTurn), then a slot among the checks running at
// once. Admitted, it returns the slot's release, which the caller calls when the hash is
// done. Refused, it writes the refusal's Retry-After and log line (event is what was
// refused: "sign-in", "account creation") and returns the status and reason to show; a
// status of 0 means the client went away and nothing is to be answered.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, login, event string) (release func(), status int, why turnRefusal) {
	ok, retry, err := h.signInTurn(r, login)
	switch {
	case err != nil:
		p := h.failure(w, r, "")
		h.log.Error(event+" failed", "outcome", p.Code, "error", err.Error())
		return nil, p.Status, refusedFailed
	case retry > 0:
		h.log.Info(event+" refused", "outcome", "rate_limited")
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Round(time.Second)/time.Second)+1))
		return nil, http.StatusTooManyRequests, refusedLimited
	case !ok:
		return nil, 0, 0
	}
	if !h.signIns.acquire(r.Context()) {
		h.log.Warn(event+" refused", "outcome", "busy")
		w.Header().Set("Retry-After", "5")
		return nil, http.StatusServiceUnavailable, refusedBusy
	}
	return h.signIns.release, 0, 0
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
